import Foundation
import Testing

@testable import Cryptography

@Suite struct CertificateTests {
    @Test func appleRootCAG3() throws {
        let root = try Certificate(derEncoded: RepositoryFile.bytes("certs/AppleRootCA-G3.cer"))
        #expect(
            SHA256.colonHex(root.sha256Fingerprint)
                == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(root.subject == "C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3")
        #expect(root.issuer == root.subject)
        #expect(root.serialNumber == [0x2D, 0xC5, 0xFC, 0x88, 0xD2, 0xC5, 0x4B, 0x95])
        #expect(root.notBefore == Date(timeIntervalSince1970: 1_398_881_946))  // 2014-04-30 18:19:06Z
        #expect(try root.publicKey().curve == .p384)
        #expect(try Certificate(pemEncoded: root.pemEncoded) == root)
        #expect(
            try Certificate(contentsOfFile: RepositoryFile.root.appendingPathComponent("certs/AppleRootCA-G3.cer").path)
                == root)
        #expect(throws: CryptographyError.self) { try Certificate(contentsOfFile: "/nonexistent/root.cer") }
    }

    @Test func appleIntermediateChainsToRoot() throws {
        let root = try Certificate(derEncoded: RepositoryFile.bytes("certs/AppleRootCA-G3.cer"))
        let wwdr = try Certificate(derEncoded: RepositoryFile.bytes("Tests/SignedDataTests/Fixtures/AppleWWDRCAG6.cer"))
        #expect(wwdr.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(!wwdr.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        let validator = try CertificateChainValidator(trustedRoots: [root])
        guard case .valid(let chain) = validator.validate(leaf: wwdr, intermediates: [], at: referenceTime) else {
            Issue.record("WWDR G6 should validate under Apple Root CA - G3")
            return
        }
        #expect(chain.length == 2)
    }

    @Test func rejectsGarbageAndTrailingBytes() throws {
        let root = try RepositoryFile.bytes("certs/AppleRootCA-G3.cer")
        #expect(throws: CryptographyError.self) { try Certificate(derEncoded: root + [0]) }
        #expect(throws: CryptographyError.self) { try Certificate(derEncoded: Array(root.dropLast())) }
        #expect(throws: CryptographyError.self) { try Certificate(derEncoded: []) }
    }

    @Test func generatedChainValidatesAroundReferenceTime() throws {
        let chain = try TestChain()
        #expect(chain.leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(chain.intermediate.certificate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(chain.leaf.issuer == "OU=G1,CN=Test Intermediate")
        #expect(chain.leaf.notAfter == referenceTime + 30 * day)
        let validator = try CertificateChainValidator(trustedRoots: [chain.root.certificate])
        let result = validator.validate(
            leaf: chain.leaf, intermediates: [chain.intermediate.certificate], at: referenceTime)
        #expect(
            result
                == .valid(
                    ValidatedChain(
                        validFrom: referenceTime - 30 * day, validUntil: referenceTime + 30 * day, length: 3)))

        func reason(at time: Date, intermediates: [Certificate]? = nil, roots: [Certificate]? = nil) throws
            -> ChainValidationFailureReason?
        {
            let validator = try CertificateChainValidator(trustedRoots: roots ?? [chain.root.certificate])
            let result = validator.validate(
                leaf: chain.leaf, intermediates: intermediates ?? [chain.intermediate.certificate], at: time)
            if case .invalid(let failure) = result { return failure.reason }
            return nil
        }
        #expect(try reason(at: referenceTime + 31 * day) == .expired)
        #expect(try reason(at: referenceTime - 31 * day) == .notYetValid)
        #expect(try reason(at: referenceTime, intermediates: []) == .untrusted)
        let other = try TestChain()
        #expect(try reason(at: referenceTime, roots: [other.root.certificate]) == .untrusted)
        // A look-alike intermediate (same name, other key) fails the signature or key-identifier match.
        #expect(try reason(at: referenceTime, intermediates: [other.intermediate.certificate]) != nil)
    }

    @Test func endEntityCannotIssue() throws {
        let chain = try TestChain()
        let leafIssuer = CertificateIssuer(certificate: chain.leaf, privateKey: chain.leafKey)
        let grandchildKey = try ECPrivateKey(generatingOn: .p256)
        let grandchild = try leafIssuer.issue(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Grandchild"), serialNumber: 4,
                notBefore: referenceTime - day, notAfter: referenceTime + day, role: .endEntity),
            for: grandchildKey.publicKey)
        let validator = try CertificateChainValidator(trustedRoots: [chain.root.certificate])
        let result = validator.validate(
            leaf: grandchild, intermediates: [chain.leaf, chain.intermediate.certificate], at: referenceTime)
        guard case .invalid(let failure) = result else {
            Issue.record("a CA:FALSE certificate must not issue")
            return
        }
        #expect(failure.reason == .invalidCertificateAuthority)
    }
}
