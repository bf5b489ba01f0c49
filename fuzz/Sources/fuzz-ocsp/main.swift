import Foundation

@testable import Cryptography
@testable import SignedData

/// Online checks' parsers of untrusted bytes. The first byte picks one: 0 = an OCSP response checked by
/// `OCSP.answer` (about the seed leaf below, issued by the seed CA), 1 = an OCSP request answered by
/// `OCSPResponder`, 2 = a JWS decoded unverified as Xcode data (`CompactJWS.unverifiedPayload` and the
/// payload decoder).
private let seedCA = """
-----BEGIN CERTIFICATE-----
MIIBeDCCAR2gAwIBAgIUXnhAxjLNeX09/k6eRIfGGvTLXgwwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGU2VlZENBMB4XDTI2MTEyMzE4MzExNloXDTM2MTEyMDE4MzEx
NlowETEPMA0GA1UEAwwGU2VlZENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
WzZrQiPAFIKD7zeC2AgY6vPGY7n052a436TFR/inVtICUZCNNSeMPTuEtiSjM+4x
d3W8qXa+PPf24ivR7KcfoaNTMFEwHQYDVR0OBBYEFLQ3pYSSsmaxqDR70cp38/KP
BwxuMB8GA1UdIwQYMBaAFLQ3pYSSsmaxqDR70cp38/KPBwxuMA8GA1UdEwEB/wQF
MAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAIHFA8u+MbUmlnZ69c8QUIX2K2E5mdI4
vUMwtLAxP/bZAiEAgq4Fik+yPm/YMstk23BvYySaCpkcxJbCLsf5VJkObk4=
-----END CERTIFICATE-----
"""
private let seedLeaf = """
-----BEGIN CERTIFICATE-----
MIIBijCCAS+gAwIBAgICEjQwCgYIKoZIzj0EAwIwETEPMA0GA1UEAwwGU2VlZENB
MB4XDTI2MTEyMzE4MzExNloXDTI3MTEyMzE4MzExNlowEzERMA8GA1UEAwwIU2Vl
ZExlYWYwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS1kOx8ZELrPeHMwikQz+MF
e+NG0RJrA+ibnUiqTk7g+/pYIJWEW99pQi55rdycrHok2Wez9j4L0QCwv/OLOO4s
o3UwczAxBggrBgEFBQcBAQQlMCMwIQYIKwYBBQUHMAGGFWh0dHA6Ly9vY3NwLnRl
c3Qvb2NzcDAdBgNVHQ4EFgQUUjpf2t+ex3rUF20b5YIBt4WehiAwHwYDVR0jBBgw
FoAUtDelhJKyZrGoNHvRynfz8o8HDG4wCgYIKoZIzj0EAwIDSQAwRgIhAPj0MHI2
Q8rqAQiPoevuCO++GvwAjU+9vB4VpoqPvKTDAiEAotZH81gJgfq+fwy2voao7AYm
XIEmuVSOqJ9idzWEAWU=
-----END CERTIFICATE-----
"""

private struct Fixture {
    let ca: Certificate
    let leaf: Certificate
    let responder: CertificateIssuer
    let verifier: SignedDataVerifier
    let xcode: VerificationRequirements
}

private struct FixedClock: VerificationClock {
    func now() -> Date { Date(timeIntervalSince1970: 1_735_689_600) }
}

private let fixture: Fixture = {
    do {
        let ca = try Certificate(pemEncoded: seedCA)
        let key = try ECPrivateKey(generatingOn: .p256)
        let responder = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(commonName: "Fuzz Responder"), serialNumber: 1,
                notBefore: Date(timeIntervalSince1970: 0), notAfter: Date(timeIntervalSince1970: 4_000_000_000),
                role: .certificateAuthority(pathLength: nil)),
            key: key)
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [ca]), clock: FixedClock())
        let xcode = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.xcode, .localTesting]
        ).acceptingUnverified([.xcode, .localTesting])
        return Fixture(
            ca: ca, leaf: try Certificate(pemEncoded: seedLeaf), responder: responder, verifier: verifier, xcode: xcode)
    } catch {
        preconditionFailure("fuzz-ocsp fixture: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOCSP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 3 {
    case 0:
        _ = try? OCSP.answer(
            fromResponse: body, certificate: fixture.leaf, issuer: fixture.ca, trustedRoots: [fixture.ca],
            now: Date(timeIntervalSince1970: 1_735_689_600))
    case 1:
        _ = OCSPResponder.response(
            to: body, issuers: [fixture.responder], revokedSerials: [], now: Date(timeIntervalSince1970: 1_735_689_600),
            validity: 60)
    default:
        let result = fixture.verifier.verify(String(decoding: body, as: UTF8.self), requirements: fixture.xcode)
        _ = PayloadDecoder.decode(result)
    }
    return 0
}
