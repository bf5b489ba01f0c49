import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

@Suite struct ChainCacheTests {
    @Test func secondVerificationHitsTheCache() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let first = try pki.signer.sign(payload: transactionPayload())
        let second = try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds + 5000))
        #expect(verifier.verify(first).isVerified)
        #expect(verifier.chainCacheHits == 0)
        #expect(verifier.chainCacheMisses == 1)
        #expect(verifier.verify(second).isVerified)
        #expect(verifier.chainCacheHits == 1)
        #expect(verifier.chainCacheCount == 1)
        // A cached chain still needs a valid signature.
        var tampered = Array(second.utf8)
        tampered[tampered.count - 5] =
            tampered[tampered.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(verifier.verify(String(decoding: tampered, as: UTF8.self)).status == .invalidSignature)
        #expect(verifier.chainCacheHits == 2)
    }

    /// The cache is keyed by x5c text: a text that is not byte-for-byte the validated one must not hit,
    /// even when Swift's `String` would call it equal (U+212A KELVIN SIGN == "K").
    @Test func lookalikeCertificateTextDoesNotHitTheCache() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        #expect(verifier.verify(try pki.signer.sign(payload: transactionPayload())).isVerified)
        let texts = pki.signer.certificateChain.map { Base64.encode($0.derBytes, variant: .standard) }
        for position in 0..<2 {
            var lookalike = texts
            let original = lookalike[position]
            let index = try #require(original.firstIndex(of: "K"))
            lookalike[position] =
                String(original[..<index]) + "\u{212A}" + String(original[original.index(after: index)...])
            #expect(lookalike[position] == original)  // Swift String equality: canonical equivalence
            let header = "{\"alg\":\"ES256\",\"x5c\":[" + lookalike.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
            let token = try SignedDataSigner.sign(
                headerJSON: Data(header.utf8), payload: transactionPayload(), key: pki.signer.signingKey)
            let result = verifier.verify(token)
            #expect(result.status == .invalidCertificate)
            #expect(result.message == "x5c[\(position)] is not standard base64")
        }
        #expect(verifier.chainCacheHits == 0)
        #expect(verifier.chainCacheMisses == 1)
    }

    @Test func cachedChainIsNotUsedOutsideItsValidity() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let clock = ManualClock(referenceTime)
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]), clock: clock)
        #expect(verifier.verify(try pki.signer.sign(payload: transactionPayload())).isVerified)
        #expect(verifier.chainCacheCount == 1)
        // A verification time before the leaf's notBefore misses, and validation then rejects it.
        let tooEarly = referenceMilliseconds - Int64(400 * day * 1000)
        #expect(
            verifier.verify(try pki.signer.sign(payload: transactionPayload(signedDate: tooEarly))).status
                == .untrustedChain)
        #expect(verifier.chainCacheHits == 0)
        // Once the clock passes the leaf's notAfter the entry is dropped and not re-added; data signed
        // while the leaf was valid still verifies, through a full validation.
        clock.advance(by: 366 * day)
        #expect(verifier.verify(try pki.signer.sign(payload: transactionPayload())).isVerified)
        #expect(verifier.chainCacheHits == 0)
        #expect(verifier.chainCacheCount == 0)
    }

    @Test func leastRecentlyUsedEntryIsEvictedAtCapacity() throws {
        let cache = ChainCache(capacity: 2, shardCount: 1)
        let key = try ECPrivateKey(generatingOn: .p256).publicKey
        let entry = ChainCache.Entry(leafKey: key, validFrom: referenceTime - day, validUntil: referenceTime + day)
        let keys = (0..<3).map { ChainCache.Key(leafText: [UInt8($0)], intermediateText: [1]) }
        cache.insert(entry, for: keys[0], now: referenceTime)
        cache.insert(entry, for: keys[1], now: referenceTime)
        // 0 is now newest
        #expect(cache.leafKey(for: keys[0], verificationTime: referenceTime, now: referenceTime) != nil)
        cache.insert(entry, for: keys[2], now: referenceTime)
        #expect(cache.count == 2)
        #expect(cache.leafKey(for: keys[1], verificationTime: referenceTime, now: referenceTime) == nil)
        #expect(cache.leafKey(for: keys[0], verificationTime: referenceTime, now: referenceTime) != nil)
        #expect(cache.leafKey(for: keys[2], verificationTime: referenceTime, now: referenceTime) != nil)
        #expect(cache.hits == 3)
        #expect(cache.misses == 1)
    }

    @Test func verifierCacheStaysBounded() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        configuration.chainCacheCapacity = 3
        let verifier = try SignedDataVerifier(configuration: configuration, clock: ManualClock(referenceTime))
        for serial in 0..<6 {
            let signer = try pki.issueLeaf(serialNumber: UInt64(0x4000 + serial))
            #expect(verifier.verify(try signer.sign(payload: transactionPayload())).isVerified)
        }
        #expect(verifier.chainCacheCount <= 3)
        #expect(verifier.chainCacheCount >= 1)
    }

    @Test func disabledCacheNeverHits() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        configuration.chainCacheCapacity = 0
        let verifier = try SignedDataVerifier(configuration: configuration, clock: ManualClock(referenceTime))
        let token = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verify(token).isVerified)
        #expect(verifier.verify(token).isVerified)
        #expect(verifier.chainCacheHits == 0)
    }

    @Test func concurrentVerificationsAgree() async throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let token = try pki.signer.sign(payload: transactionPayload())
        let statuses = await withTaskGroup(of: VerificationVerdict.self) { group in
            for _ in 0..<64 { group.addTask { verifier.verify(token).status } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == .ok })
        #expect(verifier.chainCacheHits + verifier.chainCacheMisses == 64)
    }
}
