import AppStoreDomain
import Configuration
import Cryptography
import GatewayFoundation
import Testing

@testable import CallerAuthentication

/// `authentication.jwt.maxLifetime`, `iat`, and verdicts racing a JWKS reload.
@Suite struct BearerLifetimeTests {
    let f = TokenFactory.shared

    func verify(_ changes: [String: Any?], verifier: BearerTokenVerifier? = nil) -> Result<
        String, AuthenticationFailure
    > {
        (verifier ?? f.verifier).verify(f.token(claims: f.claims(changes)), keys: f.keys, now: f.now).map(\.subject)
    }

    @Test func theLifetimeIsExpMinusIat() {
        let day: Int64 = 86_400
        #expect((try? verify(["iat": f.seconds, "exp": f.seconds + day]).get()) != nil)
        #expect(verify(["iat": f.seconds, "exp": f.seconds + day + 1]) == .failure(.lifetimeTooLong))
        // Issued 23 h ago, valid for 2 h more: 25 h in all, though only 2 h are left.
        #expect(verify(["iat": f.seconds - 23 * 3600, "exp": f.seconds + 2 * 3600]) == .failure(.lifetimeTooLong))
        // A ten-year token, the kind a leaked legacy secret is.
        #expect(verify(["iat": f.seconds, "exp": f.seconds + 3650 * day]) == .failure(.lifetimeTooLong))
        // The limit is the verifier's.
        let hour = BearerTokenVerifier(issuer: f.issuer, audiences: [f.audience], maxLifetime: .seconds(3600))
        #expect(verify(["exp": f.seconds + 3600], verifier: hour).map { _ in true } == .success(true))
        #expect(verify(["exp": f.seconds + 3601], verifier: hour) == .failure(.lifetimeTooLong))
    }

    @Test func withoutIatWhatIsLeftCountsWithinTheLeeway() {
        let day: Int64 = 86_400
        #expect((try? verify(["iat": nil, "exp": f.seconds + day + 20]).get()) != nil)
        #expect(verify(["iat": nil, "exp": f.seconds + day + 40]) == .failure(.lifetimeTooLong))
    }

    @Test func anIatInTheFutureIsRefusedBeyondTheLeeway() {
        #expect((try? verify(["iat": f.seconds + 20]).get()) != nil)
        #expect(verify(["iat": f.seconds + 60]) == .failure(.issuedInFuture))
        #expect(verify(["iat": 1e308]) == .failure(.malformedToken))
        #expect(verify(["iat": -5]) == .failure(.malformedToken))
        #expect(verify(["iat": "yesterday"]) == .failure(.malformedToken))
    }

    @Test func aTokenIssuedInTheFutureIsNotRememberedAsRefused() throws {
        let clock = ManualClock(wall: f.now)
        let auth = CallerAuthenticator(
            verifier: f.verifier,
            policy: CallerPolicy(
                callers: [.init(identity: "system:serviceaccount:billing:api", apps: ["*"])], apps: []),
            clock: clock)
        auth.replaceKeys(f.keys)
        let token = "Bearer " + f.token(claims: f.claims(["iat": f.seconds + 60, "exp": f.seconds + 600]))
        #expect(auth.authenticate(authorization: token) == .failure(.unauthenticated(.issuedInFuture)))
        clock.advance(by: .seconds(45))
        #expect(try auth.authenticate(authorization: token).get()?.identity == "system:serviceaccount:billing:api")
    }
}

@Suite struct KeyGenerationTests {
    let f = TokenFactory.shared

    func authenticator() -> CallerAuthenticator {
        let auth = CallerAuthenticator(
            verifier: f.verifier,
            policy: CallerPolicy(
                callers: [.init(identity: "system:serviceaccount:billing:api", apps: ["*"])], apps: []),
            clock: ManualClock(wall: f.now))
        auth.replaceKeys(f.keys)
        return auth
    }

    /// The race: a check reads the keys of generation N and verifies the token under them; meanwhile the JWKS
    /// is reloaded without that key (generation N+1, outcomes cleared); then the check stores its success. It
    /// must not be kept, or the token would be accepted until its `exp` under keys no longer in force.
    @Test func aSuccessReachedUnderReplacedKeysIsNeverCached() throws {
        let auth = authenticator()
        let token = f.token()
        let digest = SHA256.hash(Array(token.utf8))
        // 1. The check reads the keys (generation N) and verifies: a success.
        let (keys, generation) = auth.cache.keys()
        let verified = try f.verifier.verify(token, keys: try #require(keys), now: f.now).get()
        // 2. The reload: the token's RSA key is gone.
        auth.replaceKeys(try f.keySet([f.ecJWK]))
        #expect(auth.cache.keys().generation != generation)
        // 3. The check stores its verdict: refused, nothing is kept.
        let stored = auth.cache.store(
            digest, .success(verified.subject), until: verified.expires, now: f.now, generation: generation)
        #expect(!stored)
        #expect(auth.cache.lookup(digest, now: f.now) == nil)
        // The next call verifies under the new keys.
        #expect(auth.authenticate(authorization: "Bearer " + token) == .failure(.unauthenticated(.unknownKey)))
    }

    /// The other way round: a refusal reached under the old keys (the token's key not published yet) must not
    /// keep refusing the token for a minute after the reload that publishes it.
    @Test func aRefusalReachedUnderReplacedKeysIsNeverCached() throws {
        let auth = CallerAuthenticator(
            verifier: f.verifier,
            policy: CallerPolicy(
                callers: [.init(identity: "system:serviceaccount:billing:api", apps: ["*"])], apps: []),
            clock: ManualClock(wall: f.now))
        auth.replaceKeys(try f.keySet([f.ecJWK]))
        let token = f.token()
        let digest = SHA256.hash(Array(token.utf8))
        let (keys, generation) = auth.cache.keys()
        let refusal = f.verifier.verify(token, keys: try #require(keys), now: f.now)
        #expect(refusal.map(\.subject) == .failure(.unknownKey))
        auth.replaceKeys(f.keys)
        #expect(
            !auth.cache.store(
                digest, .failure(.unknownKey), until: f.now + .seconds(60), now: f.now, generation: generation))
        #expect(try auth.authenticate(authorization: "Bearer " + token).get()?.listed == true)
    }

    @Test func verdictsOfTheKeysInForceAreCachedAndAReloadDropsThem() throws {
        let auth = authenticator()
        let token = f.token()
        let digest = SHA256.hash(Array(token.utf8))
        #expect(try auth.authenticate(authorization: "Bearer " + token).get() != nil)
        #expect(auth.cache.lookup(digest, now: f.now) == .success("system:serviceaccount:billing:api"))
        auth.replaceKeys(f.keys)
        #expect(auth.cache.lookup(digest, now: f.now) == nil && auth.cache.count == 0)
    }
}

@Suite struct CertificateCallerTests {
    let f = TokenFactory.shared

    func authenticator(_ identities: [String]?) -> CallerAuthenticator {
        CallerAuthenticator(
            verifier: f.verifier,
            policy: CallerPolicy(callers: identities.map { $0.map { .init(identity: $0, apps: ["*"]) } }, apps: []),
            clock: ManualClock(wall: f.now))
    }

    @Test func aCertificateWithoutAnIdentityIsUnauthenticated() {
        let auth = authenticator(["system:serviceaccount:billing:api"])
        #expect(
            auth.authenticate(authorization: nil, certificateNames: [])
                == .failure(.unauthenticated(.certificateWithoutIdentity)))
        // Open mode: anonymous, as without a certificate.
        #expect(authenticator(nil).authenticate(authorization: nil, certificateNames: []) == .success(nil))
    }

    @Test func aCertificateNameIsNeverAJWTSubject() throws {
        let auth = authenticator(["system:serviceaccount:billing:api", "spiffe://cluster.local/ns/billing/sa/api"])
        auth.replaceKeys(f.keys)
        #expect(
            auth.authenticate(authorization: nil, certificateNames: [.commonName("system:serviceaccount:billing:api")])
                == .failure(.permissionDenied(.unknownCaller(identity: "cn:system:serviceaccount:billing:api"))))
        let certificate = try auth.authenticate(
            authorization: nil, certificateNames: [.uri("spiffe://cluster.local/ns/billing/sa/api")]
        ).get()
        #expect(certificate?.source == .certificate && certificate?.listed == true)
        let token = f.token(claims: f.claims(["sub": "spiffe://cluster.local/ns/billing/sa/api"]))
        #expect(
            auth.authenticate(authorization: "Bearer " + token)
                == .failure(
                    .permissionDenied(.unknownCaller(identity: "jwt:spiffe://cluster.local/ns/billing/sa/api"))))
    }
}
