import Cryptography
import Foundation
import Testing

@testable import SignedData

@Suite struct AppleRootCertificatesTests {
    @Test func builtInRootIsTheShippedFileAndApplesFingerprint() throws {
        let file = Array(try Data(contentsOf: Fixture.repository.appendingPathComponent("certs/AppleRootCA-G3.cer")))
        #expect(AppleRootCertificates.rootCAG3 == file)
        let hex = SHA256.hash(AppleRootCertificates.rootCAG3).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(
            hex == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        let certificate = try Certificate(derEncoded: AppleRootCertificates.rootCAG3)
        #expect(certificate.subject.contains("Apple Root CA - G3"))
    }

    @Test func genuineSampleVerifiesUnderTheBuiltInRoot() throws {
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [try Certificate(derEncoded: AppleRootCertificates.rootCAG3)]))
        #expect(verifier.verify(try Fixture.jws("transaction-Sandbox-1")).status == .ok)
    }
}
