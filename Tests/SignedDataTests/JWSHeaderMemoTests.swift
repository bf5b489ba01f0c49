import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

/// The memo of parsed JWS headers: a kept header is only returned for exactly its text, and a verifier
/// that uses it answers as one that parses every header.
@Suite struct JWSHeaderMemoTests {
    private func header(_ jws: String) throws -> JWSHeader {
        try CompactJWS(parsing: jws, maximumLength: 1 << 20).header
    }

    @Test func onlyTheExactTextFindsAKeptHeader() throws {
        let memo = JWSHeaderMemo(slotCount: 1)  // one slot: every header collides
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let other = try AppStoreTestPKI(referenceTime: referenceTime)
        let first = try header(try pki.signer.sign(payload: transactionPayload()))
        let second = try header(try other.signer.sign(payload: transactionPayload()))
        memo.keep(first)
        #expect(first.text.withUnsafeBufferPointer { memo.header(for: $0) }?.certificateChain == first.certificateChain)
        #expect(second.text.withUnsafeBufferPointer { memo.header(for: $0) } == nil)
        var changed = first.text
        changed[changed.count / 2] ^= 1
        #expect(changed.withUnsafeBufferPointer { memo.header(for: $0) } == nil)
        #expect(Array(first.text.dropLast()).withUnsafeBufferPointer { memo.header(for: $0) } == nil)
        memo.keep(second)  // replaces the first in the only slot
        #expect(first.text.withUnsafeBufferPointer { memo.header(for: $0) } == nil)
        #expect(second.text.withUnsafeBufferPointer { memo.header(for: $0) }?.chainKey == second.chainKey)
        #expect(JWSHeaderMemo(slotCount: 0).header(for: UnsafeBufferPointer(start: nil, count: 0)) == nil)
    }

    /// Verifying the same JWS twice (the second time from the memo), with good and broken parts around a
    /// kept header, gives the same verdicts and messages as the first time.
    @Test func aKeptHeaderChangesNoVerdict() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let good = try pki.signer.sign(payload: transactionPayload())
        let parts = good.split(separator: ".").map(String.init)
        let other = try pki.signer.sign(payload: transactionPayload(signedDate: referenceMilliseconds + 5))
        let otherParts = other.split(separator: ".").map(String.init)
        let cases = [
            good,
            parts[0] + "." + otherParts[1] + "." + parts[2],  // a payload the signature does not cover
            parts[0] + ".!!." + parts[2],  // a payload that is not base64url
            parts[0] + "." + parts[1] + ".",  // no signature
            parts[0] + "." + parts[1] + "." + String(parts[2].dropLast(4)),  // a short signature
        ]
        for jws in cases {
            let first = verifier.verify(jws)
            let second = verifier.verify(jws)
            #expect(first.status == second.status && first.message == second.message, "\(jws.suffix(20))")
        }
        #expect(verifier.verify(cases[0]).isVerified)
        #expect(verifier.verify(cases[1]).status == .invalidSignature)
        #expect(verifier.verify(cases[2]).status == .malformed)
    }

    /// A header whose x5c texts are not base64 parses (and is kept), and still fails the chain every time.
    @Test func aKeptHeaderWithABadCertificateTextStillFails() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let parts = try pki.signer.sign(payload: transactionPayload()).split(separator: ".").map(String.init)
        let header = #"{"alg":"ES256","x5c":["AAAA","not base64!","AAAA"]}"#
        let encoded = Base64.encode(Array(header.utf8), variant: .urlSafeUnpadded)
        let jws = encoded + "." + parts[1] + "." + parts[2]
        for _ in 0..<2 {
            let result = verifier.verify(jws)
            #expect(result.status == .invalidCertificate && result.message.contains("x5c[1]"))
        }
    }
}
