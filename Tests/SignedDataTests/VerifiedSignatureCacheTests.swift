import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

/// The verified-signature cache: a JWS seen again costs no ECDSA, the cache stays bounded, and a hit skips
/// nothing but the signature check (trust at the verification time, kind, app and environment still decide).
@Suite struct VerifiedSignatureCacheTests {
    private func verifier(
        _ pki: AppStoreTestPKI, clock: ManualClock = ManualClock(referenceTime),
        _ configure: (inout SignedDataVerifier.Configuration) -> Void = { _ in }
    ) throws -> SignedDataVerifier {
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        configure(&configuration)
        return try SignedDataVerifier(configuration: configuration, clock: clock)
    }

    @Test func aJWSSeenAgainHitsAndADifferentOneMisses() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki)
        let token = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verify(token).isVerified)
        #expect(verifier.signatureCacheHits == 0)
        #expect(verifier.signatureCacheMisses == 1)
        #expect(verifier.signatureCacheCount == 1)
        let again = verifier.verify(token)
        #expect(again.isVerified)
        #expect(again.signedDate == Date(timeIntervalSince1970: Double(referenceMilliseconds) / 1000))
        #expect(verifier.signatureCacheHits == 1)
        // Another payload under the same chain: a miss, then an entry of its own.
        #expect(
            verifier.verify(try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds + 1)))
                .isVerified)
        #expect(verifier.signatureCacheMisses == 2)
        #expect(verifier.signatureCacheCount == 2)
    }

    @Test func aBadSignatureIsNeverCached() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki)
        var tampered = Array(try pki.signer.sign(payload: transactionPayload()).utf8)
        tampered[tampered.count - 5] =
            tampered[tampered.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let token = String(decoding: tampered, as: UTF8.self)
        #expect(verifier.verify(token).status == .invalidSignature)
        #expect(verifier.verify(token).status == .invalidSignature)
        #expect(verifier.signatureCacheHits == 0)
        #expect(verifier.signatureCacheCount == 0)
    }

    /// The key holds the signature as well as the signing input's digest: once one signature over a header and
    /// payload is cached, another one over the same bytes is checked on its own (a second valid signature
    /// misses and then counts; a forged one is refused, before and after).
    @Test func anotherSignatureOverTheSameSigningInputIsCheckedOnItsOwn() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki)
        let first = try pki.signer.sign(payload: transactionPayload())
        let second = try pki.signer.sign(payload: transactionPayload())  // ECDSA draws a new nonce
        let signingInput = { (jws: String) in jws[..<jws.lastIndex(of: ".")!] }
        #expect(signingInput(first) == signingInput(second) && first != second)
        var forgedBytes = Array(first.utf8)
        forgedBytes[forgedBytes.count - 5] =
            forgedBytes[forgedBytes.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = String(decoding: forgedBytes, as: UTF8.self)

        #expect(verifier.verify(first).isVerified)
        #expect(verifier.verify(forged).status == .invalidSignature)
        #expect(verifier.verify(second).isVerified)
        #expect(verifier.signatureCacheHits == 0)
        #expect(verifier.signatureCacheCount == 2)
        #expect(verifier.verify(second).isVerified && verifier.verify(first).isVerified)
        #expect(verifier.signatureCacheHits == 2)
        #expect(verifier.verify(forged).status == .invalidSignature)

        // The same payload and signature under another header (the same fields and chain, one more space in
        // its JSON): a different signing input, so a miss, and refused.
        let parts = first.split(separator: ".").map(String.init)
        let headerJSON = try #require(Base64.decode(parts[0], variant: .urlSafeUnpadded))
        let respaced = Base64.encode(
            [headerJSON[0], UInt8(ascii: " ")] + headerJSON.dropFirst(), variant: .urlSafeUnpadded)
        let reheadered = [respaced, parts[1], parts[2]].joined(separator: ".")
        #expect(verifier.verify(reheadered).status == .invalidSignature)
        #expect(verifier.signatureCacheHits == 2)
        #expect(verifier.signatureCacheCount == 2)
    }

    /// A hit answers only "the signature verifies": what the caller asks for is checked every time.
    @Test func aHitStillChecksKindAppAndEnvironment() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki)
        let token = try pki.signer.sign(payload: transactionPayload(environment: "Sandbox"))
        let sandbox = try VerificationRequirements(bundleID: "com.example.app", appAppleID: nil, environment: .sandbox)
        #expect(verifier.verify(token, kind: .transaction, requirements: sandbox).isVerified)
        let otherApp = try VerificationRequirements(bundleID: "com.other.app", appAppleID: nil, environment: .sandbox)
        #expect(verifier.verify(token, kind: .transaction, requirements: otherApp).status == .invalidAppIdentifier)
        let production = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: 1234, environment: .production)
        #expect(verifier.verify(token, kind: .transaction, requirements: production).status == .invalidEnvironment)
        #expect(verifier.verify(token, kind: .renewalInfo, requirements: sandbox).status == .wrongKind)
        #expect(verifier.signatureCacheHits == 3)
    }

    /// Validating at the current time: once the leaf has expired, a cached signature does not make it trusted.
    @Test func aHitStillChecksTheChainAtTheVerificationTime() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let clock = ManualClock(referenceTime)
        let verifier = try verifier(pki, clock: clock) { $0.validationTime = .now }
        let token = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verify(token).isVerified)
        clock.advance(by: 400 * day)
        #expect(verifier.verify(token).status == .untrustedChain)
    }

    @Test func theCacheStaysWithinItsCapacity() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki) { $0.signatureCacheCapacity = 4 }
        let tokens = try (0..<12).map {
            try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds + Int64($0)))
        }
        for token in tokens { #expect(verifier.verify(token).isVerified) }
        #expect(verifier.signatureCacheCount <= 4)
        #expect(verifier.signatureCacheCount >= 2)
        // The newest entry survives.
        #expect(verifier.verify(tokens[11]).isVerified)
        #expect(verifier.signatureCacheHits == 1)
    }

    @Test func aDisabledCacheNeverHits() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki) { $0.signatureCacheCapacity = 0 }
        let token = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verify(token).isVerified)
        #expect(verifier.verify(token).isVerified)
        #expect(verifier.signatureCacheHits == 0)
        #expect(verifier.signatureCacheCount == 0)
    }

    /// Two generations: a used entry is kept over ones not used since, and the total never passes capacity.
    @Test func recentlyUsedEntriesAreKept() {
        let cache = VerifiedSignatureCache(capacity: 4, shardCount: 1)
        #expect(cache.capacity == 4)
        let keys = (0..<6).map { VerifiedSignatureCache.Key(digest: SHA256.hash([UInt8($0)])) }
        cache.insert(keys[0])
        cache.insert(keys[1])
        cache.insert(keys[2])  // 0 and 1 become the older generation
        #expect(cache.contains(keys[0]))  // promoted to the newer one
        cache.insert(keys[3])  // newer {2, 0} full: it becomes the older, 1 is dropped
        #expect(cache.count <= 4)
        #expect(!cache.contains(keys[1]))
        #expect(cache.contains(keys[0]))
        #expect(cache.contains(keys[3]))
        for key in keys { cache.insert(key) }
        #expect(cache.count <= 4)
    }

    @Test func concurrentVerificationsShareTheCache() async throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try verifier(pki)
        let tokens = try (0..<4).map {
            try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds + Int64($0)))
        }
        let statuses = await withTaskGroup(of: VerificationVerdict.self) { group in
            for index in 0..<64 { group.addTask { verifier.verify(tokens[index % 4]).status } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == .ok })
        #expect(verifier.signatureCacheHits + verifier.signatureCacheMisses == 64)
        #expect(verifier.signatureCacheCount == 4)
    }
}
