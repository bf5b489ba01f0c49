import Foundation
import Testing

@testable import Cryptography

/// Files of the repository, found from this source file (no SwiftPM resources).
enum RepositoryFile {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func bytes(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(relativePath)))
    }
}

/// One reference time for every generated certificate: 2025-01-01T00:00:00Z.
let referenceTime = Date(timeIntervalSince1970: 1_735_689_600)
let day: TimeInterval = 86_400

/// A root (P-384) → intermediate (P-384, pathlen 0) → leaf (P-256) chain around `referenceTime`.
struct TestChain {
    let root: CertificateIssuer
    let intermediate: CertificateIssuer
    let leaf: Certificate
    let leafKey: ECPrivateKey

    init(leafNotBefore: Date = referenceTime - 30 * day, leafNotAfter: Date = referenceTime + 30 * day) throws {
        root = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Test Root", organization: "Tests", country: "US"),
                serialNumber: 1, notBefore: referenceTime - 3650 * day, notAfter: referenceTime + 3650 * day,
                role: .certificateAuthority(pathLength: nil)),
            key: ECPrivateKey(generatingOn: .p384))
        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        intermediate = CertificateIssuer(
            certificate: try root.issue(
                CertificateTemplate(
                    subject: DistinguishedName(commonName: "Test Intermediate", organizationalUnit: "G1"),
                    serialNumber: 2, notBefore: referenceTime - 365 * day, notAfter: referenceTime + 365 * day,
                    role: .certificateAuthority(pathLength: 0), markerExtensionOIDs: ["1.2.840.113635.100.6.2.1"]),
                for: intermediateKey.publicKey),
            privateKey: intermediateKey)
        leafKey = try ECPrivateKey(generatingOn: .p256)
        leaf = try intermediate.issue(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Test Leaf"), serialNumber: 3,
                notBefore: leafNotBefore, notAfter: leafNotAfter, role: .endEntity,
                markerExtensionOIDs: ["1.2.840.113635.100.6.11.1"]),
            for: leafKey.publicKey)
    }
}
