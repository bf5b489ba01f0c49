import Foundation
import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

/// Returns 64 bytes derived from the input length and counts its calls; optionally slow or failing.
final class FakeSigner: ES256Signer {
    let calls = Lock(0)
    let delayMicroseconds: UInt32
    let signatureLength: Int
    let failing: Bool

    init(delayMicroseconds: UInt32 = 0, signatureLength: Int = 64, failing: Bool = false) {
        self.delayMicroseconds = delayMicroseconds
        self.signatureLength = signatureLength
        self.failing = failing
    }

    struct Failure: Error {}

    func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        calls.withLock { $0 += 1 }
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }
        if failing { throw Failure() }
        return (0..<signatureLength).map { UInt8(truncatingIfNeeded: $0 &+ signingInput.count) }
    }

    var callCount: Int { calls.withLock { $0 } }
}

@Suite struct JWTTests {
    let identity = JWTIdentity(
        issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", bundleID: "com.example.app")
    let now = WallTime(millisecondsSince1970: 1_750_000_000_500)

    func decodeJSON(_ segment: Substring) throws -> [String: Any] {
        let bytes = try #require(Base64URL.decode(String(segment)))
        return try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func base64URLRoundTripsWithoutPadding() {
        #expect(Base64URL.encode(Array("f".utf8)) == "Zg")
        #expect(Base64URL.encode(Array("fo".utf8)) == "Zm8")
        #expect(Base64URL.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        for length in 0..<10 {
            let bytes = (0..<length).map { UInt8($0 * 37 & 0xFF) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("Zm9vY") == nil)
    }

    @Test func headerAndClaimsAreWhatAppleExpects() throws {
        let token = try AppStoreJWT.mint(identity: identity, now: now, signer: FakeSigner())
        let parts = token.token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!token.token.contains("="))
        let header = try decodeJSON(parts[0])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "2X9R4HXF34")
        #expect(header["typ"] as? String == "JWT")
        let claims = try decodeJSON(parts[1])
        #expect(claims["iss"] as? String == identity.issuerID)
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(claims["iat"] as? Int == 1_749_999_940)
        #expect(claims["exp"] as? Int == 1_750_001_140)
        #expect(Base64URL.decode(String(parts[2]))?.count == 64)
        #expect(token.expiresAt == WallTime(millisecondsSince1970: (1_750_000_000 - 60 + 1_200) * 1000))
        #expect(token.refreshAt == token.expiresAt - .seconds(300))
        #expect(AppStoreJWT.header(keyID: "K") == #"{"alg":"ES256","kid":"K","typ":"JWT"}"#)
    }

    @Test func claimsEscapeStrings() {
        let odd = JWTIdentity(issuerID: "a\"b\\c\n", keyID: "k", bundleID: "x")
        #expect(JWTClaims(identity: odd, now: now).json.hasPrefix(#"{"iss":"a\"b\\c\n","iat":"#))
    }

    @Test func settingsValidation() throws {
        try JWTSettings.defaults.validate()
        #expect(throws: GatewayError.self) { try JWTSettings(lifetime: .seconds(3601)).validate() }
        #expect(throws: GatewayError.self) { try JWTSettings(lifetime: .seconds(300)).validate() }
        try JWTSettings(lifetime: .seconds(3600)).validate()
    }

    @Test func rejectsNonRawSignatures() {
        #expect(throws: GatewayError.self) {
            try AppStoreJWT.mint(identity: identity, now: now, signer: FakeSigner(signatureLength: 72))
        }
    }

    @Test func cacheReusesUntilRefreshTime() throws {
        let clock = ManualClock(wall: now)
        let signer = FakeSigner()
        let cache = JWTCache()
        let first = try cache.token(for: identity, now: clock.wallNow(), signer: signer)
        clock.advance(by: .seconds(13 * 60))
        #expect(try cache.token(for: identity, now: clock.wallNow(), signer: signer) == first)
        #expect(signer.callCount == 1)
        // iat = now - 60 s, exp = iat + 20 min, refresh 5 min before: 14 min after now.
        clock.advance(by: .seconds(60))
        let second = try cache.token(for: identity, now: clock.wallNow(), signer: signer)
        #expect(second != first)
        #expect(signer.callCount == 2)
    }

    @Test func identitiesAreCachedSeparately() throws {
        let signer = FakeSigner()
        let cache = JWTCache()
        var other = identity
        other.bundleID = "com.example.other"
        _ = try cache.token(for: identity, now: now, signer: signer)
        _ = try cache.token(for: other, now: now, signer: signer)
        _ = try cache.token(for: identity, now: now, signer: signer)
        #expect(signer.callCount == 2)
    }

    @Test func invalidateForcesOneReMint() throws {
        let signer = FakeSigner()
        let cache = JWTCache()
        let old = try cache.token(for: identity, now: now, signer: signer)
        cache.invalidate(identity, token: old.token)
        let later = now + .seconds(1)
        let fresh = try cache.token(for: identity, now: later, signer: signer)
        #expect(fresh != old)
        // A late 401 for the old token must not throw away the new one.
        cache.invalidate(identity, token: old.token)
        #expect(try cache.token(for: identity, now: later, signer: signer) == fresh)
        #expect(signer.callCount == 2)
    }

    @Test func failedMintCachesNothing() {
        let cache = JWTCache()
        let failing = FakeSigner(failing: true)
        #expect(throws: FakeSigner.Failure.self) { try cache.token(for: identity, now: now, signer: failing) }
        #expect(throws: FakeSigner.Failure.self) { try cache.token(for: identity, now: now, signer: failing) }
        #expect(failing.callCount == 2)
    }

    @Test func concurrentCallersShareOneMint() async throws {
        let signer = FakeSigner(delayMicroseconds: 20_000)
        let cache = JWTCache()
        let identity = identity
        let now = now
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try cache.token(for: identity, now: now, signer: signer).token }
            }
            var all: Set<String> = []
            for try await token in group { all.insert(token) }
            return all
        }
        #expect(tokens.count == 1)
        #expect(signer.callCount == 1)
    }
}
