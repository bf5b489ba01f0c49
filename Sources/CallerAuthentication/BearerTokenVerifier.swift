import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// Verifies a caller's bearer JWT (RFC 7519) against a JWKS: compact JWS form, `alg` RS256 or ES256 only,
/// the key named by `kid`, the signature, then `exp`, `nbf`, `iat`, the lifetime, `iss`, `aud` and `sub`. Pure: keys and time are
/// passed in. Every field is hostile: sizes are bounded before anything is decoded, numbers are checked for
/// range before use, and any shape other than the expected one is a `malformedToken`.
package struct BearerTokenVerifier: Sendable {
    /// The `iss` every token must carry.
    package let issuer: String
    /// A token's `aud` must name one of these.
    package let audiences: Set<String>
    /// Clock skew tolerated on `exp`, `nbf` and `iat` (and on `exp - now` for a token without `iat`).
    package let leeway: Duration
    /// The longest lifetime accepted: `exp - iat`, or `exp - now` when the token has no `iat`.
    package let maxLifetime: Duration

    /// Largest token accepted, in bytes (Kubernetes service-account tokens are about 1 KiB).
    package static let maxTokenBytes = 8 * 1024
    /// Largest `sub` accepted, in bytes.
    package static let maxSubjectBytes = 1024

    /// A verifier for tokens of `issuer` naming one of `audiences`, living at most `maxLifetime` (24 h).
    package init(
        issuer: String, audiences: [String], leeway: Duration = .seconds(30), maxLifetime: Duration = .seconds(86_400)
    ) {
        self.issuer = issuer
        self.audiences = Set(audiences)
        self.leeway = leeway
        self.maxLifetime = maxLifetime
    }

    /// What a verified token says.
    package struct Verified: Sendable, Hashable {
        /// `sub`: the caller's identity.
        package var subject: String
        /// `exp`: until when the token is valid.
        package var expires: WallTime
    }

    /// Verifies `token` (the text after "Bearer ") at `now`.
    package func verify(_ token: String, keys: JSONWebKeySet, now: WallTime) -> Result<Verified, AuthenticationFailure>
    {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maxTokenBytes else { return .failure(.malformedToken) }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty,
            let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else { return .failure(.malformedToken) }
        guard let algorithm = JWTAlgorithm(rawValue: header.alg) else { return .failure(.unsupportedAlgorithm) }
        // RFC 7515 §4.1.11: extensions we do not understand must not be ignored.
        guard header.crit == nil else { return .failure(.malformedToken) }
        guard let key = keys.candidates(kid: header.kid, algorithm: algorithm) else { return .failure(.unknownKey) }
        let signingInput = Array(bytes[..<(parts[1].endIndex)])
        guard key.verifies(signature, for: signingInput) else { return .failure(.badSignature) }

        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(payloadBytes)) else {
            return .failure(.malformedToken)
        }
        guard let exp = claims.exp.flatMap(Self.instant) else { return .failure(.expired) }
        let skew = leeway
        guard now < exp + skew else { return .failure(.expired) }
        if let nbfValue = claims.nbf {
            guard let nbf = Self.instant(nbfValue) else { return .failure(.malformedToken) }
            guard nbf <= now + skew else { return .failure(.notYetValid) }
        }
        // A long-lived token is worth stealing: bound the lifetime the issuer claims, or, without `iat`, what is
        // left of it (the only part of that reading on this clock, so the skew applies there alone).
        if let iatValue = claims.iat {
            guard let iat = Self.instant(iatValue) else { return .failure(.malformedToken) }
            guard iat <= now + skew else { return .failure(.issuedInFuture) }
            guard exp - iat <= maxLifetime else { return .failure(.lifetimeTooLong) }
        } else {
            guard exp - now <= maxLifetime + skew else { return .failure(.lifetimeTooLong) }
        }
        guard claims.iss == issuer else { return .failure(.wrongIssuer) }
        guard let audience = claims.aud, audience.values.contains(where: audiences.contains) else {
            return .failure(.wrongAudience)
        }
        guard let subject = claims.sub, !subject.isEmpty, subject.utf8.count <= Self.maxSubjectBytes else {
            return .failure(.missingSubject)
        }
        return .success(Verified(subject: subject, expires: exp))
    }

    /// Seconds since 1970 (NumericDate, RFC 7519 §2) as an instant; nil when not finite or outside 1970–9999.
    static func instant(_ seconds: Double) -> WallTime? {
        guard seconds.isFinite, seconds >= 0, seconds <= 253_402_300_799 else { return nil }
        return WallTime(millisecondsSince1970: Int64((seconds * 1000).rounded(.down)))
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String?
        var crit: [String]?
    }

    private struct Claims: Decodable {
        var iss: String?
        var sub: String?
        var aud: Audience?
        var exp: Double?
        var nbf: Double?
        var iat: Double?
    }

    /// `aud`: one string or a list of strings.
    private struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                values = [one]
            } else {
                values = Array(try container.decode([String].self).prefix(64))
            }
        }
    }
}
