import Cryptography
import Foundation
import SignedData
import TestSupport
import Testing

/// Replays fuzz/regressions/ocsp and fuzz/corpus/ocsp through the entry points `fuzz-ocsp` drives (first byte:
/// 0 OCSP response, 1 OCSP request, 2 Xcode JWS), so a fixed crash stays fixed without a fuzzer build.
@Suite struct OCSPFuzzRegressionTests {
    @Test func ocspInputs() throws {
        let inputs = FuzzInputs.of("ocsp")
        #expect(inputs.count >= 7)
        let key = try ECPrivateKey(generatingOn: .p256)
        let issuer = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Replay Responder"), serialNumber: 1,
                notBefore: referenceTime - day, notAfter: referenceTime + day,
                role: .certificateAuthority(pathLength: nil)),
            key: key)
        let leaf = try issuer.issue(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Replay Leaf"), serialNumber: 2, notBefore: referenceTime - day,
                notAfter: referenceTime + day, role: .endEntity),
            for: key.publicKey)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [Fixture.appleRoot()]), clock: ManualClock(referenceTime))
        let xcode = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.xcode, .localTesting]
        ).acceptingUnverified([.xcode, .localTesting])
        var decodedXcode = 0
        for input in inputs where !input.isEmpty {
            let body = Array(input.dropFirst())
            switch input[0] % 3 {
            case 0:
                // Another issuer than the one that signed it: nothing may verify.
                #expect(throws: CryptographyError.self) {
                    try OCSP.answer(
                        fromResponse: body, certificate: leaf, issuer: issuer.certificate,
                        trustedRoots: [issuer.certificate], now: referenceTime)
                }
            case 1:
                #expect(
                    !OCSPResponder.response(
                        to: body, issuers: [issuer], revokedSerials: [], now: referenceTime, validity: 60
                    ).isEmpty)
            default:
                let result = verifier.verify(String(decoding: body, as: UTF8.self), requirements: xcode)
                if result.status == .unverifiedByDesign, PayloadDecoder.decode(result) != nil { decodedXcode += 1 }
            }
        }
        #expect(decodedXcode >= 1, "the Xcode seed decodes")
    }
}
