import Testing

@testable import AppStoreDomain
@testable import Configuration

/// The typed-identity rule: a `callers[].identity` names one kind of name, and only a name of that kind, proven
/// by the matching credential, is that caller.
@Suite struct CallerNameTests {
    @Test func theNotationNamesOneKind() {
        let cases: [(String, CallerName)] = [
            ("system:serviceaccount:billing:api", .subject("system:serviceaccount:billing:api")),
            ("billing", .subject("billing")),
            ("spiffe://cluster.local/ns/billing/sa/api", .uri("spiffe://cluster.local/ns/billing/sa/api")),
            ("https://example.com/svc", .uri("https://example.com/svc")),
            ("x-y.z+1://a", .uri("x-y.z+1://a")),
            ("dns:Reports.Internal", .dns("reports.internal")),
            ("cn:legacy-batch", .commonName("legacy-batch")),
            ("uri:urn:uuid:1234", .uri("urn:uuid:1234")),
            ("jwt:spiffe://cluster.local/ns/a/sa/b", .subject("spiffe://cluster.local/ns/a/sa/b")),
            ("jwt:jwt:x", .subject("jwt:x")),
            // Not `scheme://`: a colon with no "//", a scheme starting with a digit, a bad scheme character.
            ("urn:uuid:1234", .subject("urn:uuid:1234")),
            ("1abc://x", .subject("1abc://x")),
            ("a_b://x", .subject("a_b://x")),
            ("spiffe:/x", .subject("spiffe:/x")),
            ("DNS:upper-case-prefix", .subject("DNS:upper-case-prefix")),
            ("", .subject("")),
        ]
        for (text, name) in cases {
            #expect(CallerName(listed: text) == name, "\(text)")
        }
    }

    @Test func everyNameHasOneSpellingThatReadsBack() {
        let names: [CallerName] = [
            .subject("system:serviceaccount:billing:api"), .subject("spiffe://x/y"), .subject("dns:x"),
            .subject("jwt:x"), .subject("cn:x"), .subject("uri:x"), .uri("spiffe://x/y"), .uri("urn:uuid:1"),
            .uri("dns://x"), .uri("jwt://x"), .dns("a.example"), .dns("*.example"), .commonName("legacy"),
            .commonName("spiffe://x"),
        ]
        for name in names {
            #expect(CallerName(listed: name.description) == name, "\(name.description)")
        }
        #expect(CallerName.subject("system:serviceaccount:a:b").description == "system:serviceaccount:a:b")
        #expect(CallerName.subject("spiffe://x/y").description == "jwt:spiffe://x/y")
        #expect(CallerName.uri("spiffe://x/y").description == "spiffe://x/y")
        #expect(CallerName.dns("a.example").description == "dns:a.example")
        #expect(CallerName.commonName("legacy").description == "cn:legacy")
        // Distinct names never share a spelling.
        #expect(Set(names.map(\.description)).count == names.count)
    }

    @Test func aCertificateProvesItsSANsAndItsCNOnlyWhenAllowed() {
        let both = CallerName.certificateNames(
            uris: ["spiffe://c/ns/a/sa/b"], dnsNames: ["First.Example", "", "second.example"], commonName: "cn",
            includeCommonName: false)
        #expect(both == [.uri("spiffe://c/ns/a/sa/b"), .dns("first.example"), .dns("second.example")])
        #expect(
            CallerName.certificateNames(uris: [], dnsNames: [], commonName: "legacy", includeCommonName: false)
                .isEmpty)
        #expect(
            CallerName.certificateNames(uris: [], dnsNames: ["a.b"], commonName: "legacy", includeCommonName: true)
                == [.dns("a.b"), .commonName("legacy")])
        #expect(
            CallerName.certificateNames(uris: [], dnsNames: [], commonName: "", includeCommonName: true).isEmpty)
    }
}

@Suite struct TypedCallerPolicyTests {
    let apps = [
        GatewayConfiguration.App(
            name: "example", bundleId: "com.example.app", appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .auto)
    ]

    func policy(_ identities: [String]) -> CallerPolicy {
        CallerPolicy(callers: identities.map { .init(identity: $0, apps: ["*"]) }, apps: apps)
    }

    func admitted(_ policy: CallerPolicy, _ names: [CallerName]) -> CallerIdentity? {
        guard case .success(let caller) = policy.admit(names) else { return nil }
        return caller
    }

    @Test func aNameMatchesOnlyEntriesOfItsKind() {
        let spiffe = "spiffe://cluster.local/ns/billing/sa/api"
        let policy = policy([spiffe, "system:serviceaccount:billing:api", "dns:reports.internal"])
        // The URI SAN is the spiffe entry; a JWT whose sub is the same text is not.
        #expect(admitted(policy, [.uri(spiffe)])?.identity == spiffe)
        #expect(policy.admit([.subject(spiffe)]) == .failure(.unknownCaller(identity: "jwt:" + spiffe)))
        // A token's sub is the bare entry; a certificate CN or DNS SAN of the same text is not.
        #expect(admitted(policy, [.subject("system:serviceaccount:billing:api")])?.source == .jwt)
        #expect(admitted(policy, [.commonName("system:serviceaccount:billing:api")]) == nil)
        #expect(admitted(policy, [.dns("system:serviceaccount:billing:api")]) == nil)
        // `dns:` entries are DNS SANs only, never a sub of that text.
        #expect(admitted(policy, [.dns("reports.internal")])?.identity == "dns:reports.internal")
        #expect(admitted(policy, [.subject("reports.internal")]) == nil)
        #expect(admitted(policy, [.subject("dns:reports.internal")]) == nil)
    }

    @Test func theReportedCommonNameIsNoLongerAJWTSubject() {
        // A certificate whose CN is a listed JWT subject: even with its CN allowed, `cn:` is another name.
        let policy = policy(["system:serviceaccount:billing:api"])
        let names = CallerName.certificateNames(
            uris: [], dnsNames: [], commonName: "system:serviceaccount:billing:api", includeCommonName: true)
        #expect(
            policy.admit(names) == .failure(.unknownCaller(identity: "cn:system:serviceaccount:billing:api")))
        #expect(admitted(self.policy(["cn:system:serviceaccount:billing:api"]), names)?.listed == true)
    }

    @Test func theFirstListedNameOfACertificateIsTheCaller() {
        let policy = CallerPolicy(
            callers: [
                .init(identity: "dns:second.example", apps: ["*"], weight: 2),
                .init(identity: "uri:urn:x", apps: ["example"], weight: 3),
            ], apps: apps)
        let names: [CallerName] = [.uri("spiffe://unlisted"), .uri("urn:x"), .dns("second.example")]
        let caller = admitted(policy, names)
        // URIs come before DNS names; the entry's spelling and weight go with it.
        #expect(caller?.identity == "uri:urn:x" && caller?.weight == 3 && caller?.name == .uri("urn:x"))
        #expect(policy.authorize(caller, app: "example") == nil)
        // None listed: refused, naming the first.
        #expect(policy.admit([.uri("spiffe://a"), .dns("b")]) == .failure(.unknownCaller(identity: "spiffe://a")))
        // Open mode: the first name, unlisted.
        let open = CallerPolicy(callers: nil, apps: apps)
        #expect(admitted(open, names) == CallerIdentity(name: .uri("spiffe://unlisted")))
    }

    @Test func listedCallersKeepTheirConfiguredSpelling() {
        let policy = policy(["jwt:billing", "dns:API.Example"])
        #expect(admitted(policy, [.subject("billing")])?.identity == "jwt:billing")
        let caller = admitted(policy, [.dns("api.example")])
        #expect(caller?.identity == "dns:API.Example")
        #expect(policy.authorize(caller, app: "example") == nil)
        #expect(policy.listedIdentities == ["dns:API.Example", "jwt:billing"])
    }
}
