import Foundation
import Testing

@testable import Cryptography

/// OCSP without sockets: requests, the test responder, and what `OCSP.answer` accepts and refuses.
@Suite struct OCSPTests {
    static let url = "http://ocsp.test/ocsp"
    let root: CertificateIssuer
    let intermediate: CertificateIssuer
    let leaf: Certificate
    let otherLeaf: Certificate
    let now = referenceTime

    init() throws {
        root = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "OCSP Test Root", organization: "Tests", country: "US"),
                serialNumber: 1, notBefore: referenceTime - 3650 * day, notAfter: referenceTime + 3650 * day,
                role: .certificateAuthority(pathLength: nil)),
            key: ECPrivateKey(generatingOn: .p384))
        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        intermediate = CertificateIssuer(
            certificate: try root.issue(
                CertificateTemplate(
                    subject: DistinguishedName(commonName: "OCSP Test Intermediate"), serialNumber: 2,
                    notBefore: referenceTime - 365 * day, notAfter: referenceTime + 365 * day,
                    role: .certificateAuthority(pathLength: 0), ocspResponderURL: Self.url),
                for: intermediateKey.publicKey),
            privateKey: intermediateKey)
        let issuer = intermediate
        func issueLeaf(_ serial: UInt64) throws -> Certificate {
            try issuer.issue(
                CertificateTemplate(
                    subject: DistinguishedName(commonName: "OCSP Test Leaf \(serial)"), serialNumber: serial,
                    notBefore: referenceTime - 30 * day, notAfter: referenceTime + 30 * day, role: .endEntity,
                    ocspResponderURL: Self.url),
                for: ECPrivateKey(generatingOn: .p256).publicKey)
        }
        self.leaf = try issueLeaf(0x1234)
        self.otherLeaf = try issueLeaf(0x1235)
    }

    private func respond(
        _ request: [UInt8], revoked: Set<[UInt8]> = [], issuers: [CertificateIssuer]? = nil,
        validity: TimeInterval = 3_600
    ) -> [UInt8] {
        OCSPResponder.response(
            to: request, issuers: issuers ?? [root, intermediate], revokedSerials: revoked, now: now, validity: validity
        )
    }

    private func answer(_ response: [UInt8], for certificate: Certificate? = nil, at time: Date? = nil)
        throws(CryptographyError) -> OCSPAnswer
    {
        try OCSP.answer(
            fromResponse: response, certificate: certificate ?? leaf, issuer: intermediate.certificate,
            trustedRoots: [root.certificate], now: time ?? now)
    }

    @Test func responderURLsComeFromAuthorityInformationAccess() {
        #expect(OCSP.responderURLs(of: leaf) == [Self.url])
        #expect(OCSP.responderURLs(of: intermediate.certificate) == [Self.url])
        #expect(OCSP.responderURLs(of: root.certificate).isEmpty)
    }

    @Test func goodStatusWithItsUpdateTimes() throws {
        let answer = try answer(respond(try OCSP.request(for: leaf, issuer: intermediate.certificate)))
        #expect(answer.status == .good)
        #expect(abs(answer.thisUpdate.timeIntervalSince(now)) < 2)
        #expect(abs((answer.nextUpdate ?? .distantPast).timeIntervalSince(now + 3_600)) < 2)
    }

    @Test func revokedStatus() throws {
        let request = try OCSP.request(for: leaf, issuer: intermediate.certificate)
        let answer = try answer(respond(request, revoked: [leaf.serialNumber]))
        guard case .revoked = answer.status else {
            Issue.record("expected revoked, got \(answer.status)")
            return
        }
        // Another serial under the same issuer stays good.
        #expect(try self.answer(respond(request, revoked: [otherLeaf.serialNumber])).status == .good)
    }

    @Test func intermediateStatusSignedByTheRoot() throws {
        let request = try OCSP.request(for: intermediate.certificate, issuer: root.certificate)
        let answer = try OCSP.answer(
            fromResponse: respond(request), certificate: intermediate.certificate, issuer: root.certificate,
            trustedRoots: [root.certificate], now: now)
        #expect(answer.status == .good)
    }

    @Test func anAnswerAboutAnotherCertificateProvesNothing() throws {
        let response = respond(try OCSP.request(for: otherLeaf, issuer: intermediate.certificate))
        #expect(throws: CryptographyError.self) { try answer(response, for: leaf) }
    }

    @Test func aStrangerCannotAnswer() throws {
        let strangerKey = try ECPrivateKey(generatingOn: .p384)
        // Same name as the real intermediate, another key: not the issuer of the leaf.
        let stranger = CertificateIssuer(
            certificate: try CertificateIssuer.selfSignedRoot(
                CertificateTemplate(
                    subject: DistinguishedName(commonName: "OCSP Test Intermediate"), serialNumber: 9,
                    notBefore: referenceTime - day, notAfter: referenceTime + day,
                    role: .certificateAuthority(pathLength: nil)),
                key: strangerKey
            ).certificate,
            privateKey: strangerKey)
        let request = try OCSP.request(for: leaf, issuer: intermediate.certificate)
        // The stranger is not the issuer the request names: the responder refuses...
        #expect(throws: CryptographyError.self) { try answer(respond(request, issuers: [stranger])) }
        // ...and an answer signed by the stranger for the request's CertID is refused by the client.
        let forged = OCSPResponder.response(
            to: try OCSP.request(for: leaf, issuer: stranger.certificate), issuers: [stranger], revokedSerials: [],
            now: now, validity: 3_600)
        #expect(throws: CryptographyError.self) { try answer(forged) }
    }

    @Test func staleAndFutureAnswersAreRefused() throws {
        let response = respond(try OCSP.request(for: leaf, issuer: intermediate.certificate), validity: 600)
        #expect(throws: CryptographyError.self) { try answer(response, at: now + 600 + OCSP.allowedClockSkew + 60) }
        #expect(throws: CryptographyError.self) { try answer(response, at: now - OCSP.allowedClockSkew - 60) }
        #expect(try answer(response, at: now + 300).status == .good)
    }

    @Test func hostileBytesNeverTrap() throws {
        let good = respond(try OCSP.request(for: leaf, issuer: intermediate.certificate))
        var inputs: [[UInt8]] = [
            [], [0x30], [0x30, 0x80], Array(repeating: 0x30, count: 4096), Array(good.prefix(good.count / 2)),
        ]
        for index in stride(from: 0, to: good.count, by: max(1, good.count / 64)) {
            var flipped = good
            flipped[index] ^= 0x5A
            inputs.append(flipped)
        }
        for input in inputs {
            if let verdict = try? answer(input) {
                #expect(verdict.status == .good, "only an untouched body may verify")
            }
            // The responder answers anything with a DER OCSPResponse (malformedRequest for garbage).
            #expect(
                !OCSPResponder.response(to: input, issuers: [intermediate], revokedSerials: [], now: now, validity: 60)
                    .isEmpty)
        }
        #expect(throws: CryptographyError.self) { try answer(respond([0x30, 0x00])) }
    }
}
