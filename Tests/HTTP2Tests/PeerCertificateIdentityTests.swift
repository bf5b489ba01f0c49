import Testing

@testable import HTTP2

@Suite struct PeerCertificateIdentityTests {
    @Test func uriThenFirstDNSThenCommonName() {
        #expect(
            PeerCertificateIdentity(uriNames: ["spiffe://c/ns/a/sa/b"], dnsNames: ["a.b"], commonName: "cn").identity
                == "spiffe://c/ns/a/sa/b")
        #expect(
            PeerCertificateIdentity(dnsNames: ["first.example", "second.example"], commonName: "cn").identity
                == "first.example")
        #expect(PeerCertificateIdentity(commonName: "cn").identity == "cn")
        #expect(PeerCertificateIdentity(commonName: "").identity == nil)
        #expect(PeerCertificateIdentity().identity == nil)
    }
}
