import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// Checks request JWTs as Apple does (Apple's App Store Server API documentation): `Authorization: Bearer <jwt>`, header
/// `alg` ES256, `kid` a known key, `typ` JWT; claims `iss` (the key's issuer), `aud` appstoreconnect-v1,
/// `bid` (the key's app), `exp` in the future and at most 60 minutes after `iat`, `iat` not in the
/// future beyond the allowed skew; the ES256 signature under the key. Any failure is a 401.
struct RequestAuthenticator: Sendable {
    let apps: [SimulatedApp]
    let allowedClockSkew: Duration

    /// Why a token was refused (for tests; the client only ever sees 401).
    enum Refusal: Error, Equatable {
        case missing, malformed, algorithm, type, unknownKey, signature, issuer, audience, bundleId, expired
        case notYetValid, lifetimeTooLong
    }

    /// The app the token authenticates.
    func authenticate(authorization: String?, now: WallTime) throws(Refusal) -> SimulatedApp {
        guard let authorization, authorization.hasPrefix("Bearer ") else { throw .missing }
        let token = authorization.dropFirst("Bearer ".count).trimmingCharacters(in: .whitespaces)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let header = Self.object(headerBytes), let claims = Self.object(claimsBytes)
        else { throw .malformed }
        guard header["alg"] as? String == "ES256" else { throw .algorithm }
        guard header["typ"] as? String == "JWT" else { throw .type }
        guard let keyId = header["kid"] as? String, let app = apps.first(where: { $0.keyId == keyId }) else {
            throw .unknownKey
        }
        guard app.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)) else {
            throw .signature
        }
        guard claims["iss"] as? String == app.issuerId else { throw .issuer }
        guard claims["aud"] as? String == JWTClaims.audience else { throw .audience }
        guard claims["bid"] as? String == app.bundleId else { throw .bundleId }
        guard let expiresAt = Self.seconds(claims["exp"]) else { throw .malformed }
        let nowSeconds = now.secondsSince1970
        guard expiresAt > nowSeconds else { throw .expired }
        let skew = allowedClockSkew.wholeMilliseconds / 1000
        if claims["iat"] != nil {
            guard let issuedAt = Self.seconds(claims["iat"]) else { throw .malformed }
            guard issuedAt <= nowSeconds + skew else { throw .notYetValid }
            guard expiresAt - issuedAt <= 3600 else { throw .lifetimeTooLong }
        } else {
            // Apple tolerates a missing `iat` (Apple's Python client omits it); `exp` alone then bounds it.
            guard expiresAt - nowSeconds <= 3600 + skew else { throw .lifetimeTooLong }
        }
        return app
    }

    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    /// A NumericDate: an integer number of seconds (JSON numbers only).
    private static func seconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.isFinite, abs(double) < 1e15 else { return nil }
        return Int64(double)
    }
}
