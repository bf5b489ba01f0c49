import Cryptography
import Foundation
import GatewayFoundation

/// The verification keys of a JWKS document (RFC 7517), as the issuer of caller tokens publishes them (a
/// Kubernetes API server's `/openid/v1/jwks`): RSA keys for RS256, P-256 keys for ES256. Keys of other types,
/// curves or uses are skipped, so a document may carry more than the gateway understands.
package struct JSONWebKeySet: Sendable {
    /// One usable key.
    package struct Key: Sendable {
        /// The key id (`kid`); tokens name it in their header. Empty when the JWK has none.
        package var id: String
        /// The one algorithm the key verifies.
        package var algorithm: JWTAlgorithm
        let rsa: RSAPublicKey?
        let ec: ECPublicKey?

        /// Whether `signature` signs `message` under this key with its algorithm.
        func verifies(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            switch algorithm {
            case .rs256: rsa?.isValidRS256Signature(signature, for: message) ?? false
            case .es256: ec?.isValidSignature(signature, for: message) ?? false
            }
        }
    }

    /// Largest JWKS file read (bytes); a larger one is refused as a whole.
    package static let maxDocumentBytes = 256 * 1024
    /// Most keys kept.
    package static let maxKeys = 64

    /// The usable keys, in document order.
    package let keys: [Key]
    /// Why each skipped JWK was skipped (for the reload log line), at most `maxKeys`.
    package let skipped: [String]

    /// Why a document is not a JWKS at all.
    package struct ParseError: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// Parses a JWKS document.
    package init(json bytes: [UInt8]) throws(ParseError) {
        guard bytes.count <= Self.maxDocumentBytes else {
            throw ParseError(
                description: "the JWKS is \(bytes.count) bytes, over the \(Self.maxDocumentBytes)-byte limit")
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch {
            throw ParseError(description: "not a JWKS document (a JSON object with a \"keys\" list)")
        }
        var keys: [Key] = []
        var skipped: [String] = []
        for (index, jwk) in document.keys.enumerated() {
            guard keys.count < Self.maxKeys else {
                skipped.append("keys beyond the first \(Self.maxKeys) usable ones are ignored")
                break
            }
            do throws(ParseError) {
                keys.append(try Self.key(jwk))
            } catch {
                if skipped.count < Self.maxKeys { skipped.append("keys[\(index)]: \(error.description)") }
            }
        }
        self.keys = keys
        self.skipped = skipped
    }

    /// The keys a token with header `kid` and `alg` may be verified with: the key with that id (and algorithm),
    /// or, for a token without `kid`, the only key of that algorithm.
    package func candidates(kid: String?, algorithm: JWTAlgorithm) -> Key? {
        if let kid {
            return keys.first { $0.id == kid && $0.algorithm == algorithm }
        }
        let matching = keys.filter { $0.algorithm == algorithm }
        return matching.count == 1 ? matching[0] : nil
    }

    private static func key(_ jwk: JWK) throws(ParseError) -> Key {
        if let use = jwk.use, use != "sig" { throw ParseError(description: "use \"\(clip(use))\" is not sig") }
        let id = jwk.kid ?? ""
        guard id.utf8.count <= 256 else { throw ParseError(description: "kid longer than 256 bytes") }
        switch jwk.kty {
        case "RSA":
            if let alg = jwk.alg, alg != "RS256" { throw ParseError(description: "alg \(clip(alg)) is not RS256") }
            guard let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode) else {
                throw ParseError(description: "an RSA key needs base64url n and e")
            }
            do {
                return Key(id: id, algorithm: .rs256, rsa: try RSAPublicKey(modulus: n, exponent: e), ec: nil)
            } catch {
                throw ParseError(description: error.reason)
            }
        case "EC":
            guard jwk.crv == "P-256" else {
                throw ParseError(description: "curve \(clip(jwk.crv ?? "none")) is not P-256")
            }
            if let alg = jwk.alg, alg != "ES256" { throw ParseError(description: "alg \(clip(alg)) is not ES256") }
            guard let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode) else {
                throw ParseError(description: "an EC key needs base64url x and y")
            }
            do {
                return Key(id: id, algorithm: .es256, rsa: nil, ec: try ECPublicKey(p256X: x, y: y))
            } catch {
                throw ParseError(description: error.reason)
            }
        default:
            throw ParseError(description: "kty \(clip(jwk.kty)) is not RSA or EC")
        }
    }

    private static func clip(_ text: String) -> String { EchoedInput.clip(text, maxBytes: 32) }

    private struct Document: Decodable {
        var keys: [JWK]
    }

    /// One entry of `keys`, read leniently: a member that is not a string counts as absent, so one odd key
    /// is skipped (with a reason) instead of failing the whole document.
    private struct JWK: Decodable {
        var kty: String
        var kid: String?
        var use: String?
        var alg: String?
        var n: String?
        var e: String?
        var crv: String?
        var x: String?
        var y: String?

        private enum CodingKeys: String, CodingKey { case kty, kid, use, alg, n, e, crv, x, y }

        init(from decoder: any Decoder) throws {
            guard let container = try? decoder.container(keyedBy: CodingKeys.self) else {
                kty = ""
                return
            }
            func text(_ key: CodingKeys) -> String? {
                (try? container.decodeIfPresent(String.self, forKey: key)) ?? nil
            }
            kty = text(.kty) ?? ""
            kid = text(.kid)
            use = text(.use)
            alg = text(.alg)
            n = text(.n)
            e = text(.e)
            crv = text(.crv)
            x = text(.x)
            y = text(.y)
        }
    }
}

/// The signature algorithms caller tokens may use.
package enum JWTAlgorithm: String, Sendable, Hashable {
    case rs256 = "RS256"
    case es256 = "ES256"
}
