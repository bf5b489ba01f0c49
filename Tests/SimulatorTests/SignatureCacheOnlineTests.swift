import Cryptography
import Foundation
import SignedData
import Testing

@testable import Simulator

/// With online checks, a JWS whose signature is cached still has its certificates' revocation checked.
@Suite struct SignatureCacheOnlineTests {
    @Test func aCachedSignatureDoesNotSkipRevocation() async throws {
        let clock = OnlineChecksTests.Clock()
        let responder = OnlineChecksTests.Responder(.answer, clock: clock)
        let root = SimulatorFixture.sharedPKI.root.certificate
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [root])
        configuration.onlineChecks = true
        let verifier = try SignedDataVerifier(configuration: configuration, clock: clock, ocspTransport: responder)
        let revoked = try OnlineChecksTests.online.revoked.sign(
            .object([
                ("transactionId", .string("8")), ("originalTransactionId", .string("8")),
                ("bundleId", .string("com.example")),
                ("signedDate", .integer(Int64(OnlineChecksTests.referenceTime.timeIntervalSince1970 * 1000))),
                ("environment", .string("Sandbox")),
            ]))
        let first = await verifier.verifyOnline(revoked)
        #expect(first.status == .untrustedChain)
        #expect(first.message.contains("revoked"))
        // The signature itself verified and is cached; the revocation still decides.
        let again = await verifier.verifyOnline(revoked)
        #expect(again.status == .untrustedChain)
        #expect(again.message.contains("revoked"))
        #expect(verifier.signatureCacheHits >= 1)
    }
}
