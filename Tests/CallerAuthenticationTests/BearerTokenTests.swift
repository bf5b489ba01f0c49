import AppStoreDomain
import Configuration
import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import CallerAuthentication

/// Keys generated per run (none committed) and tokens minted with them.
final class TokenFactory: @unchecked Sendable {
    static let shared = TokenFactory()
    let rsa: RSAPrivateKey
    let ec: ECPrivateKey
    let otherRSA: RSAPrivateKey
    let issuer = "https://kubernetes.default.svc.cluster.local"
    let audience = "appstore-gateway"
    let now = WallTime(millisecondsSince1970: 1_750_000_000_000)

    private init() {
        rsa = try! RSAPrivateKey(generatingBits: 2048)
        otherRSA = try! RSAPrivateKey(generatingBits: 2048)
        ec = try! ECPrivateKey(generatingOn: .p256)
    }

    var rsaJWK: [String: Any] {
        [
            "kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256",
            "n": Base64URL.encode(rsa.modulus), "e": Base64URL.encode(rsa.exponent),
        ]
    }

    var ecJWK: [String: Any] {
        let point = try! ec.publicKey.p256Coordinates!
        return [
            "kty": "EC", "kid": "ec-1", "crv": "P-256", "x": Base64URL.encode(point.x), "y": Base64URL.encode(point.y),
        ]
    }

    func keySet(_ jwks: [[String: Any]]) throws -> JSONWebKeySet {
        try JSONWebKeySet(json: [UInt8](try JSONSerialization.data(withJSONObject: ["keys": jwks])))
    }

    var keys: JSONWebKeySet { try! keySet([rsaJWK, ecJWK]) }

    var verifier: BearerTokenVerifier { BearerTokenVerifier(issuer: issuer, audiences: ["x", audience]) }

    var seconds: Int64 { now.millisecondsSince1970 / 1000 }

    func claims(_ changes: [String: Any?] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": issuer, "sub": "system:serviceaccount:billing:api", "aud": [audience], "exp": seconds + 600,
            "iat": seconds,
        ]
        for (key, value) in changes { claims[key] = value }
        return claims
    }

    /// A compact JWS of `header` and `claims` (raw JSON text allowed), signed as `alg` says.
    func token(
        alg: String = "RS256", kid: String? = "rsa-1", header extra: [String: Any] = [:],
        claims: [String: Any]? = nil, rawPayload: String? = nil, signer: RSAPrivateKey? = nil
    ) -> String {
        var header: [String: Any] = ["alg": alg, "typ": "JWT"]
        if let kid { header["kid"] = kid }
        for (key, value) in extra { header[key] = value }
        let headerPart = Base64URL.encode(try! JSONSerialization.data(withJSONObject: header))
        let payload =
            rawPayload.map { Array($0.utf8) }
            ?? [UInt8](try! JSONSerialization.data(withJSONObject: claims ?? self.claims()))
        let input = headerPart + "." + Base64URL.encode(payload)
        let signature: [UInt8]
        switch alg {
        case "ES256": signature = try! ec.signature(for: Array(input.utf8))
        default: signature = try! (signer ?? rsa).rs256Signature(for: Array(input.utf8))
        }
        return input + "." + Base64URL.encode(signature)
    }
}

@Suite struct BearerTokenVerifierTests {
    let f = TokenFactory.shared

    func verify(_ token: String) -> Result<BearerTokenVerifier.Verified, AuthenticationFailure> {
        f.verifier.verify(token, keys: f.keys, now: f.now)
    }

    @Test func rs256AndES256TokensVerify() {
        #expect((try? verify(f.token()).get().subject) == "system:serviceaccount:billing:api")
        #expect((try? verify(f.token(alg: "ES256", kid: "ec-1")).get().subject) == "system:serviceaccount:billing:api")
        let expires = try? verify(f.token()).get().expires
        #expect(expires == WallTime(millisecondsSince1970: (f.seconds + 600) * 1000))
    }

    @Test func audienceMayBeOneString() {
        #expect((try? verify(f.token(claims: f.claims(["aud": "appstore-gateway"]))).get()) != nil)
    }

    @Test func eachFailureHasItsReason() {
        let cases: [(String, AuthenticationFailure)] = [
            ("", .malformedToken),
            ("a.b", .malformedToken),
            ("a.b.c.d", .malformedToken),
            ("!!.!!.!!", .malformedToken),
            (f.token(alg: "HS256"), .unsupportedAlgorithm),
            (f.token(alg: "none"), .unsupportedAlgorithm),
            (f.token(alg: "RS512"), .unsupportedAlgorithm),
            (f.token(kid: "gone"), .unknownKey),
            // ES256 header naming the RSA key's id: no key of that id has that algorithm.
            (f.token(alg: "ES256", kid: "rsa-1"), .unknownKey),
            (f.token(signer: f.otherRSA), .badSignature),
            (f.token(claims: f.claims(["exp": f.seconds - 60])), .expired),
            (f.token(claims: f.claims(["exp": nil])), .expired),
            (f.token(claims: f.claims(["nbf": f.seconds + 600])), .notYetValid),
            (f.token(claims: f.claims(["iss": "https://evil"])), .wrongIssuer),
            (f.token(claims: f.claims(["iss": nil])), .wrongIssuer),
            (f.token(claims: f.claims(["aud": ["other"]])), .wrongAudience),
            (f.token(claims: f.claims(["aud": nil])), .wrongAudience),
            (f.token(claims: f.claims(["sub": ""])), .missingSubject),
            (f.token(claims: f.claims(["sub": String(repeating: "s", count: 2000)])), .missingSubject),
            (f.token(header: ["crit": ["exp"]]), .malformedToken),
        ]
        for (token, reason) in cases {
            guard case .failure(let failure) = verify(token) else {
                Issue.record("accepted: \(reason)")
                continue
            }
            #expect(failure == reason, "\(token.prefix(40))")
        }
    }

    @Test func aTamperedPayloadFailsTheSignature() {
        let token = f.token()
        let parts = token.split(separator: ".").map(String.init)
        let forged = Base64URL.encode(
            Array(#"{"iss":"x","sub":"admin","aud":"appstore-gateway","exp":99999999999}"#.utf8))
        #expect(verify([parts[0], forged, parts[2]].joined(separator: ".")) == .failure(.badSignature))
    }

    @Test func clockSkewIsToleratedWithinTheLeeway() {
        #expect((try? verify(f.token(claims: f.claims(["exp": f.seconds - 10]))).get()) != nil)
        #expect((try? verify(f.token(claims: f.claims(["nbf": f.seconds + 10]))).get()) != nil)
    }

    @Test func hostileClaimValuesNeverTrap() {
        let payloads = [
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":"a","aud":"appstore-gateway","exp":1e308}"#,
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":"a","aud":"appstore-gateway","exp":-1e308}"#,
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":"a","aud":"appstore-gateway","exp":"soon"}"#,
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":"a","aud":7,"exp":99999999999}"#,
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":["a"],"aud":"appstore-gateway","exp":99999999999}"#,
            #"{"iss":"https://kubernetes.default.svc.cluster.local","sub":"a","aud":"appstore-gateway","exp":99999999999,"nbf":1e400}"#,
            String(repeating: "[", count: 5000),
            "null", "[]", "\u{0}",
        ]
        for payload in payloads {
            let result = verify(f.token(rawPayload: payload))
            guard case .failure(let failure) = result else {
                Issue.record("accepted: \(payload.prefix(60))")
                continue
            }
            #expect([.malformedToken, .expired, .wrongAudience].contains(failure), "\(payload.prefix(60)): \(failure)")
        }
        // A token over the size bound is refused before any decoding.
        let huge = String(repeating: "a", count: BearerTokenVerifier.maxTokenBytes) + ".b.c"
        #expect(verify(huge) == .failure(.malformedToken))
    }

    @Test func aTokenWithoutKidUsesTheOnlyKeyOfItsAlgorithm() throws {
        let oneRSA = try f.keySet([f.rsaJWK])
        #expect((try? f.verifier.verify(f.token(kid: nil), keys: oneRSA, now: f.now).get()) != nil)
        var second = f.rsaJWK
        second["kid"] = "rsa-2"
        let twoRSA = try f.keySet([f.rsaJWK, second])
        #expect(f.verifier.verify(f.token(kid: nil), keys: twoRSA, now: f.now) == .failure(.unknownKey))
    }
}

@Suite struct JSONWebKeySetTests {
    let f = TokenFactory.shared

    @Test func unusableKeysAreSkippedWithAReason() throws {
        var weak = f.rsaJWK
        weak["kid"] = "weak"
        weak["n"] = Base64URL.encode([UInt8](repeating: 0xC1, count: 128))  // 1024 bits
        var offCurve = f.ecJWK
        offCurve["kid"] = "off-curve"
        offCurve["y"] = Base64URL.encode([UInt8](repeating: 7, count: 32))
        let keys = try f.keySet([
            f.rsaJWK, weak, offCurve, ["kty": "oct", "k": "c2VjcmV0"], ["kty": "EC", "crv": "P-384", "x": "", "y": ""],
            ["kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"], ["kty": "RSA", "n": 5, "e": "AQAB"], f.ecJWK,
        ])
        #expect(keys.keys.map(\.id) == ["rsa-1", "ec-1"])
        #expect(keys.skipped.count >= 5)
    }

    @Test func documentsAreBounded() throws {
        let big = [UInt8](repeating: 0x20, count: JSONWebKeySet.maxDocumentBytes + 1)
        #expect(throws: JSONWebKeySet.ParseError.self) { try JSONWebKeySet(json: big) }
        #expect(throws: JSONWebKeySet.ParseError.self) { try JSONWebKeySet(json: Array("{\"keys\":5}".utf8)) }
        #expect(throws: JSONWebKeySet.ParseError.self) { try JSONWebKeySet(json: Array("[]".utf8)) }
        // Deep nesting within the size bound: refused by the parser's depth limit, never a stack overflow.
        let deep = Array("{\"keys\":".utf8) + [UInt8](repeating: UInt8(ascii: "["), count: 200_000)
        #expect(throws: JSONWebKeySet.ParseError.self) { try JSONWebKeySet(json: deep) }
        let many = (0..<100).map { index -> [String: Any] in
            var key = f.ecJWK
            key["kid"] = "k\(index)"
            return key
        }
        #expect(try f.keySet(many).keys.count == JSONWebKeySet.maxKeys)
    }
}

@Suite struct CallerAuthenticatorTests {
    let f = TokenFactory.shared
    let apps = [
        GatewayConfiguration.App(
            name: "example", bundleId: "com.example.app", appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .auto),
        GatewayConfiguration.App(
            name: "other", bundleId: "com.example.other", appAppleId: 2, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .auto),
    ]

    func authenticator(callers: [GatewayConfiguration.Caller]?, clock: ManualClock) -> CallerAuthenticator {
        let authenticator = CallerAuthenticator(
            verifier: f.verifier, policy: CallerPolicy(callers: callers, apps: apps), clock: clock, cacheCapacity: 4)
        authenticator.replaceKeys(f.keys)
        return authenticator
    }

    @Test func listedCallersAreAdmittedWithTheirWeight() throws {
        let clock = ManualClock(wall: f.now)
        let auth = authenticator(
            callers: [.init(identity: "system:serviceaccount:billing:api", apps: ["example"], weight: 3)], clock: clock)
        let caller = try auth.authenticate(authorization: "Bearer " + f.token()).get()
        #expect(caller?.identity == "system:serviceaccount:billing:api")
        #expect(caller?.weight == 3 && caller?.listed == true && caller?.source == .jwt)
        // The scheme is case-insensitive; the token beats a certificate identity.
        let again = try auth.authenticate(authorization: "bearer " + f.token(), certificateNames: [.uri("spiffe://x")])
            .get()
        #expect(again?.source == .jwt)
    }

    @Test func refusals() {
        let clock = ManualClock(wall: f.now)
        let auth = authenticator(callers: [.init(identity: "spiffe://ok", apps: ["*"])], clock: clock)
        #expect(
            auth.authenticate(authorization: nil)
                == .failure(.unauthenticated(.missingCredentials)))
        #expect(
            auth.authenticate(authorization: "Basic abc")
                == .failure(.unauthenticated(.malformedToken)))
        #expect(
            auth.authenticate(authorization: "Bearer ")
                == .failure(.unauthenticated(.malformedToken)))
        #expect(
            auth.authenticate(authorization: "Bearer " + f.token())
                == .failure(.permissionDenied(.unknownCaller(identity: "system:serviceaccount:billing:api"))))
        #expect(
            (try? auth.authenticate(authorization: nil, certificateNames: [.uri("spiffe://ok")]).get())?.source
                == .certificate)
        let noJWT = CallerAuthenticator(
            verifier: nil, policy: CallerPolicy(callers: [.init(identity: "a", apps: ["*"])], apps: apps), clock: clock)
        #expect(
            noJWT.authenticate(authorization: "Bearer x.y.z")
                == .failure(.unauthenticated(.tokensNotAccepted)))
    }

    @Test func openModeAdmitsAnyoneAndKeepsVerifiedIdentities() throws {
        let clock = ManualClock(wall: f.now)
        let auth = authenticator(callers: nil, clock: clock)
        #expect(try auth.authenticate(authorization: nil).get() == nil)
        #expect(try auth.authenticate(authorization: "Bearer junk").get() == nil)
        let caller = try auth.authenticate(authorization: "Bearer " + f.token()).get()
        #expect(caller?.identity == "system:serviceaccount:billing:api" && caller?.listed == false)
    }

    @Test func cachedVerdictsExpireWithTheTokenAndKeyRotationClearsThem() throws {
        let clock = ManualClock(wall: f.now)
        let auth = authenticator(
            callers: [.init(identity: "system:serviceaccount:billing:api", apps: ["*"])], clock: clock)
        let token = f.token(claims: f.claims(["exp": f.seconds + 5]))
        #expect((try? auth.authenticate(authorization: "Bearer " + token).get()) != nil)
        // Past exp + leeway the cached success no longer counts.
        clock.advance(by: .seconds(40))
        #expect(
            auth.authenticate(authorization: "Bearer " + token)
                == .failure(.unauthenticated(.expired)))
        // A fresh token verifies; after a rotation that drops its key it is refused at once.
        let fresh = f.token(claims: [
            "iss": f.issuer, "sub": "system:serviceaccount:billing:api", "aud": f.audience,
            "exp": f.seconds + 3600,
        ])
        #expect((try? auth.authenticate(authorization: "Bearer " + fresh).get()) != nil)
        auth.replaceKeys(try f.keySet([f.ecJWK]))
        #expect(
            auth.authenticate(authorization: "Bearer " + fresh)
                == .failure(.unauthenticated(.unknownKey)))
    }

    @Test func theCacheStaysBounded() {
        let cache = VerifiedTokenCache(capacity: 4)
        let now = f.now
        for index in 0..<50 {
            cache.store([UInt8(index)], .success("s"), until: now + .seconds(60), now: now, generation: 0)
            #expect(cache.count <= 4)
        }
        #expect(cache.lookup([49], now: now) == .success("s"))
        #expect(cache.lookup([49], now: now + .seconds(61)) == nil)
    }
}

@Suite struct BearerFuzzCorpusTests {
    /// The committed seeds of `fuzz-bearer` (and any regressions) run through the same entry points on every
    /// `make test`, so a once-found crash stays fixed without the fuzzer.
    @Test func seedsNeverTrap() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let f = TokenFactory.shared
        let auth = CallerAuthenticator(
            verifier: f.verifier,
            policy: CallerPolicy(callers: [.init(identity: "system:serviceaccount:a:b", apps: ["*"])], apps: []),
            clock: ManualClock(wall: f.now), cacheCapacity: 8)
        auth.replaceKeys(f.keys)
        var seen = 0
        for folder in ["fuzz/corpus/bearer", "fuzz/regressions/bearer"] {
            let directory = root.appendingPathComponent(folder)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
                let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
                seen += 1
                if bytes.first == UInt8(ascii: "{") {
                    _ = try? JSONWebKeySet(json: bytes)
                } else {
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect((try? auth.authenticate(authorization: text).get()) == nil)
                    #expect(
                        (try? auth.authenticate(authorization: "Bearer " + text).get()) == nil
                    )
                }
            }
        }
        #expect(seen >= 5)
    }
}
