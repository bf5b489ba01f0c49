import Cryptography
import Foundation
import GatewayFoundation
import Testing

@testable import SignedData

/// Generated PKI around `referenceTime` and forged variants of a valid JWS, each with its exact verdict.
@Suite struct ForgedInputTests {
    let pki: AppStoreTestPKI
    let verifier: SignedDataVerifier
    let valid: String

    init() throws {
        pki = try AppStoreTestPKI(referenceTime: referenceTime)
        verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        valid = try pki.signer.sign(payload: transactionPayload())
    }

    private func parts(_ jws: String) -> [String] {
        jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    private func header(alg: String = "ES256", chain: [Certificate]) -> Data {
        let x5c = chain.map { Base64.encode($0.derBytes, variant: .standard) }
        return json(["alg": alg, "x5c": x5c])
    }

    private var defaultChain: [Certificate] { [pki.leaf, pki.intermediate.certificate, pki.root.certificate] }

    private func expect(
        _ jws: String, _ status: VerificationVerdict, mentioning text: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let result = verifier.verify(jws)
        #expect(result.status == status, "\(result.message)", sourceLocation: sourceLocation)
        if let text {
            #expect(result.message.contains(text), "\(result.message)", sourceLocation: sourceLocation)
        }
    }

    @Test func validTokenVerifies() {
        let result = verifier.verify(valid)
        #expect(result.status == .ok)
        #expect(result.kind == .transaction)
        #expect(result.signedDate == referenceTime)
        #expect(result.rawJSON == transactionPayload())
    }

    @Test func flippedSignatureBit() throws {
        var signature = try #require(Base64.decode(parts(valid)[2], variant: .urlSafeUnpadded))
        signature[17] ^= 0x01
        let p = parts(valid)
        expect(p[0] + "." + p[1] + "." + Base64.encode(signature, variant: .urlSafeUnpadded), .invalidSignature)
    }

    @Test func payloadSwappedFromAnotherJWS() throws {
        let other = try pki.signer.sign(payload: transactionPayload(bundleID: "com.example.other"))
        expect(parts(valid)[0] + "." + parts(other)[1] + "." + parts(valid)[2], .invalidSignature)
    }

    @Test func reorderedChain() throws {
        let reordered = try SignedDataSigner.sign(
            headerJSON: header(chain: [pki.intermediate.certificate, pki.leaf, pki.root.certificate]),
            payload: transactionPayload(), key: pki.leafKey)
        expect(reordered, .invalidCertificate, mentioning: "1.2.840.113635.100.6.2.1")
    }

    @Test func truncated() {
        expect(String(valid.prefix(valid.count / 2)), .malformed)
        expect(String(valid.dropLast(1)), .malformed)  // 85 base64url symbols cannot be whole bytes
        expect(String(valid.dropLast(2)), .invalidSignature, mentioning: "63 bytes")
        expect(parts(valid)[0] + "." + parts(valid)[1] + ".", .malformed)
        expect("", .malformed)
        expect(valid + ".", .malformed)
    }

    @Test(arguments: [2, 4, 1, 0])
    func wrongCertificateCount(count: Int) throws {
        let chain = Array((defaultChain + [pki.root.certificate]).prefix(count))
        let token = try SignedDataSigner.sign(
            headerJSON: header(chain: chain), payload: transactionPayload(), key: pki.leafKey)
        expect(token, .invalidChainLength, mentioning: "\(count)")
    }

    @Test(arguments: ["none", "HS256", "ES384", "es256", "RS256"])
    func unsupportedAlgorithm(alg: String) throws {
        let token = try SignedDataSigner.sign(
            headerJSON: header(alg: alg, chain: defaultChain), payload: transactionPayload(), key: pki.leafKey)
        expect(token, .unsupportedAlgorithm, mentioning: alg)
        expect(parts(token)[0] + "." + parts(token)[1] + ".", .malformed)  // alg none with an empty signature
    }

    @Test func derEncodedSignature() throws {
        let p = parts(valid)
        let raw = try #require(Base64.decode(p[2], variant: .urlSafeUnpadded))
        let der = try #require(ECDSA_DERForTests.encode(raw))
        expect(
            p[0] + "." + p[1] + "." + Base64.encode(der, variant: .urlSafeUnpadded), .invalidSignature,
            mentioning: "DER")
    }

    @Test func chainToAnotherRoot() throws {
        let impostor = try AppStoreTestPKI(referenceTime: referenceTime, rootName: "Test Root CA - G3")
        expect(try impostor.signer.sign(payload: transactionPayload()), .untrustedChain, mentioning: "configured root")
        // Apple's real chain is untrusted by a verifier configured with only the test root, too.
        expect(try Fixture.jws("transaction-Sandbox-1"), .untrustedChain)
        // Our leaf and intermediate with the impostor's root in x5c[2]: x5c[2] is never trusted, so OK.
        let swappedRoot = try SignedDataSigner.sign(
            headerJSON: header(chain: [pki.leaf, pki.intermediate.certificate, impostor.root.certificate]),
            payload: transactionPayload(), key: pki.leafKey)
        expect(swappedRoot, .ok)
    }

    @Test func leafExpiredOrNotYetValidAtSignedDate() throws {
        let expired = try pki.issueLeaf(notBefore: referenceTime - 60 * day, notAfter: referenceTime - day)
        expect(
            try expired.sign(payload: transactionPayload()), .untrustedChain, mentioning: "leaf certificate had expired"
        )
        let future = try pki.issueLeaf(notBefore: referenceTime + day, notAfter: referenceTime + 60 * day)
        expect(try future.sign(payload: transactionPayload()), .untrustedChain, mentioning: "not yet valid")
        // Signed while the leaf was valid: still OK later, because validation happens at signedDate.
        let earlier = referenceMilliseconds - Int64(30 * day * 1000)
        expect(try expired.sign(payload: transactionPayload(signedDate: earlier)), .ok)
    }

    @Test func missingMarkerOIDs() throws {
        let plainLeaf = try pki.issueLeaf(withMarker: false)
        expect(
            try plainLeaf.sign(payload: transactionPayload()), .invalidCertificate,
            mentioning: "1.2.840.113635.100.6.11.1")
        let plainIntermediate = try pki.issueIntermediate(withMarker: false)
        let underPlain = try pki.issueLeaf(from: plainIntermediate)
        expect(
            try underPlain.sign(payload: transactionPayload()), .invalidCertificate,
            mentioning: "1.2.840.113635.100.6.2.1")
    }

    @Test func p384LeafIsRejected() throws {
        let p384 = try pki.issueLeaf(curve: .p384)
        expect(try p384.sign(payload: transactionPayload()), .invalidCertificate, mentioning: "P-256")
    }

    @Test func bindingFailures() throws {
        let wrongBundle = verifier.verify(valid, requirements: try .init(bundleID: "com.example.wrong"))
        #expect(wrongBundle.status == .invalidAppIdentifier)
        #expect(wrongBundle.rawJSON == transactionPayload(), "the signature verified, so the payload is reported")
        let wrongEnvironment = verifier.verify(
            valid, requirements: try .init(bundleID: "com.example.app", appAppleID: 1, environment: .production))
        #expect(wrongEnvironment.status == .invalidEnvironment)
        #expect(wrongEnvironment.message.contains("Sandbox"))
        #expect(
            verifier.verify(valid, requirements: try .init(bundleID: "com.example.app", environment: .sandbox))
                .isVerified)
    }

    @Test func garbageInputs() throws {
        let p = parts(valid)
        expect("@@@.###.$$$", .malformed)
        expect(p[0] + "=." + p[1] + "." + p[2], .malformed, mentioning: "header")
        expect(p[0] + "." + p[1] + "==." + p[2], .malformed, mentioning: "payload")
        expect(p[0].replacingOccurrences(of: "-", with: "+") + "x." + p[1] + "." + p[2], .malformed)
        expect(p[0] + " ." + p[1] + "." + p[2], .malformed)
        let huge = p[0] + "." + String(repeating: "A", count: 70_000) + "." + p[2]
        expect(huge, .malformed, mentioning: "limit")
        expect(Base64.encode(Array("not json".utf8), variant: .urlSafeUnpadded) + "." + p[1] + "." + p[2], .malformed)
        let notObject = try SignedDataSigner.sign(
            headerJSON: header(chain: defaultChain), payload: Data("[1,2]".utf8), key: pki.leafKey)
        expect(notObject, .malformed, mentioning: "payload")
        let noKind = try SignedDataSigner.sign(
            headerJSON: header(chain: defaultChain), payload: json(["signedDate": 1]), key: pki.leafKey)
        expect(noKind, .malformed)
        let noX5c = try SignedDataSigner.sign(
            headerJSON: json(["alg": "ES256"]), payload: transactionPayload(), key: pki.leafKey)
        expect(noX5c, .malformed, mentioning: "x5c")
        let badCert = try SignedDataSigner.sign(
            headerJSON: json(["alg": "ES256", "x5c": ["AAAA", "AAAA", "AAAA"]]), payload: transactionPayload(),
            key: pki.leafKey)
        expect(badCert, .invalidCertificate)
        let urlSafeCert = try SignedDataSigner.sign(
            headerJSON: json([
                "alg": "ES256", "x5c": defaultChain.map { Base64.encode($0.derBytes, variant: .urlSafeUnpadded) },
            ]),
            payload: transactionPayload(), key: pki.leafKey)
        expect(urlSafeCert, .invalidCertificate, mentioning: "standard base64")
    }
}

/// DER re-encoding of a raw r‖s signature through Cryptography's own parser path, built by hand here so
/// the tests do not depend on internals: SEQUENCE { INTEGER r, INTEGER s }.
enum ECDSA_DERForTests {
    static func encode(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }
}
