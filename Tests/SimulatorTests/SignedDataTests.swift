import Cryptography
import Foundation
import GatewayFoundation
import SignedData
import Testing

@testable import Simulator

/// Every JWS the simulator returns verifies against its root like Apple's data against Apple's root.
@Suite struct SignedDataTests {
    /// Checks one JWS by hand: header, x5c of 3, chain to the root at `signedDate`, OIDs, ES256.
    static func expectVerifies(_ jws: String, root: Certificate, validator: CertificateChainValidator) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
            let x5c = header["x5c"] as? [String], x5c.count == 3,
            let signature = Base64URL.decode(parts[2])
        else {
            Issue.record("malformed JWS header")
            return
        }
        #expect(header["alg"] as? String == "ES256")
        #expect(Set(header.keys) == ["alg", "x5c"])
        let certificates = x5c.compactMap { Base64.decode($0, variant: .standard) }.compactMap {
            try? Certificate(derEncoded: $0)
        }
        #expect(certificates.count == 3)
        guard certificates.count == 3 else { return }
        #expect(certificates[2] == root)
        #expect(certificates[1].hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(certificates[0].hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        let signedDate = (SimulatorFixture.payload(jws)["signedDate"] as? Int64) ?? 0
        let at = Date(timeIntervalSince1970: TimeInterval(signedDate) / 1000)
        if case .invalid(let failure) = validator.validate(
            leaf: certificates[0], intermediates: [certificates[1]], at: at)
        {
            Issue.record("chain: \(failure)")
        }
        let key = try? certificates[0].publicKey()
        #expect(key?.curve == .p256)
        #expect(key?.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)) == true)
    }

    @Test func pkiIsShapedLikeApples() throws {
        let pki = SimulatorFixture.sharedPKI
        #expect(try pki.root.certificate.publicKey().curve == .p384)
        #expect(try pki.intermediate.certificate.publicKey().curve == .p384)
        #expect(try pki.leaf.publicKey().curve == .p256)
        #expect(pki.root.certificate.subject == pki.root.certificate.issuer)
        #expect(pki.intermediate.certificate.issuer == pki.root.certificate.subject)
        #expect(pki.leaf.issuer == pki.intermediate.certificate.subject)
        #expect(pki.root.certificate.hasExtension(oid: "2.5.29.14"))  // subject key identifier
        #expect(pki.leaf.hasExtension(oid: "2.5.29.35"))  // authority key identifier
        #expect(!pki.root.certificate.hasExtension(oid: SimulatorPKI.intermediateMarkerOID))
        let rootYears = pki.root.certificate.notAfter.timeIntervalSince(pki.root.certificate.notBefore) / (365 * 86_400)
        let leafYears = pki.leaf.notAfter.timeIntervalSince(pki.leaf.notBefore) / (365 * 86_400)
        #expect(rootYears > 20 && leafYears < 3 && leafYears > 1.5)
    }

    @Test func everyReturnedJWSVerifiesAgainstTheRoot() async throws {
        let fixture = SimulatorFixture()
        let root = SimulatorFixture.sharedPKI.root.certificate
        let validator = try CertificateChainValidator(trustedRoots: [root])
        let customer = fixture.busiestCustomer
        var all: [String] = []
        let history = SimulatorFixture.object(
            await fixture.send("GET", "/inApps/v2/history/\(customer.appTransactionId)"))
        all += history["signedTransactions"] as? [String] ?? []
        let statuses = SimulatorFixture.object(
            await fixture.send("GET", "/inApps/v1/subscriptions/\(customer.appTransactionId)"))
        for group in statuses["data"] as? [[String: Any]] ?? [] {
            for last in group["lastTransactions"] as? [[String: Any]] ?? [] {
                all += [last["signedTransactionInfo"], last["signedRenewalInfo"]].compactMap { $0 as? String }
            }
        }
        let now = SimulatorFixture.referenceTime.millisecondsSince1970
        let notifications = SimulatorFixture.object(
            await fixture.send(
                "POST", "/inApps/v1/notifications/history",
                body: "{\"startDate\":\(now - 170 * 86_400_000),\"endDate\":\(now)}"))
        for item in notifications["notificationHistory"] as? [[String: Any]] ?? [] {
            guard let signed = item["signedPayload"] as? String else { continue }
            all.append(signed)
            let data = SimulatorFixture.payload(signed)["data"] as? [String: Any] ?? [:]
            all += [data["signedTransactionInfo"], data["signedRenewalInfo"]].compactMap { $0 as? String }
        }
        #expect(all.count > 40)
        for jws in all { Self.expectVerifies(jws, root: root, validator: validator) }

        // The verifier the gateway uses accepts them, bound to the app and environment.
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [root]))
        let requirements = try VerificationRequirements(
            bundleID: fixture.app.bundleId, appAppleID: fixture.app.appAppleId, environment: .production)
        for jws in all.prefix(30) {
            let result = verifier.verify(jws, requirements: requirements)
            #expect(result.isVerified, "\(result.status): \(result.message)")
        }
    }
}
