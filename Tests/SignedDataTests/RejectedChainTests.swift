import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

/// Which verifications need a full chain validation (kept off event loops), and the memory of failed ones.
@Suite struct RejectedChainTests {
    @Test func onlyCachedChainsVerifyWithoutValidation() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let jws = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verifyIfChainCached(jws) == nil)
        #expect(verifier.verify(jws).isVerified)
        #expect(verifier.verifyIfChainCached(jws)?.isVerified == true)
        // Malformed input needs no chain at all: a verdict at once.
        #expect(verifier.verifyIfChainCached("not a jws")?.status == .malformed)
    }

    /// What an event loop may verify in place: only a JWS whose chain and ES256 signature both verified before.
    @Test func onlyCachedSignaturesVerifyWithoutECDSA() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let first = try pki.signer.sign(payload: transactionPayload())
        let second = try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds - 5_000))
        #expect(verifier.verifyIfCached(first) == nil)  // neither chain nor signature known
        #expect(verifier.verify(first).isVerified)
        #expect(verifier.verifyIfCached(first)?.isVerified == true)
        // Same chain, a signature never checked: an ECDSA is due, so not on a loop.
        #expect(verifier.verifyIfCached(second) == nil)
        #expect(verifier.verifyIfChainCached(second)?.isVerified == true)
        #expect(verifier.verifyIfCached(second)?.isVerified == true)
        // A tampered payload under a known signature is a miss too, never a pass.
        let parts = first.split(separator: ".")
        let tampered = "\(parts[0]).\(Base64URL.encode(Array(#"{"bundleId":"x"}"#.utf8))).\(parts[2])"
        #expect(verifier.verifyIfCached(tampered)?.isVerified != true)
        // With the signature cache off, nothing that needs a signature is ever answered in place.
        var uncached = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        uncached.signatureCacheCapacity = 0
        let noCache = try SignedDataVerifier(configuration: uncached, clock: ManualClock(referenceTime))
        #expect(noCache.verify(first).isVerified)
        #expect(noCache.verifyIfCached(first) == nil)
    }

    @Test func aFailedChainIsRefusedFromMemoryForTheSameInstantOnly() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let clock = ManualClock(referenceTime)
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        configuration.rejectedChainTTL = .seconds(30)
        let verifier = try SignedDataVerifier(configuration: configuration, clock: clock)
        let tooEarly = referenceMilliseconds - Int64(400 * day * 1000)
        let bad = try pki.signer.sign(payload: transactionPayload(signedDate: tooEarly))
        #expect(verifier.verifyIfChainCached(bad) == nil)
        #expect(verifier.verify(bad).status == .untrustedChain)
        #expect(verifier.verifyIfChainCached(bad)?.status == .untrustedChain)
        // Another instant with the same chain is not poisoned: it still needs (and passes) validation.
        let good = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verifyIfChainCached(good) == nil)
        #expect(verifier.verify(good).isVerified)
        // After the TTL the failure is forgotten and validated again.
        clock.advance(by: 31)
        #expect(verifier.verifyIfChainCached(bad) == nil)
    }

    @Test func aChainFailingAtTheCurrentTimeIsRefusedFromMemoryWhileTheClockMoves() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        // Twenty years on, every certificate of the chain has expired.
        let clock = ManualClock(referenceTime.addingTimeInterval(20 * 365 * 86_400))
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [pki.root.certificate])
        configuration.rejectedChainTTL = .seconds(30)
        configuration.validationTime = .now
        let verifier = try SignedDataVerifier(configuration: configuration, clock: clock)
        let jws = try pki.signer.sign(payload: transactionPayload())
        #expect(verifier.verify(jws).status == .untrustedChain)
        // The current time is another instant on every call, yet the failure is remembered for its TTL.
        clock.advance(by: 1)
        #expect(verifier.verifyIfChainCached(jws)?.status == .untrustedChain)
        clock.advance(by: 30)
        #expect(verifier.verifyIfChainCached(jws) == nil)
    }

    @Test func signedDatesOutsideApplesRangeAreMalformed() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        for date in [Int64.max, Int64.min, -1, 253_402_300_800_000] {
            let payload = json(["transactionId": "1", "signedDate": date, "environment": "Sandbox"])
            let result = verifier.verify(try pki.signer.sign(payload: payload))
            #expect(result.status == .malformed)
            #expect(result.signedDate == nil)
        }
    }
}
