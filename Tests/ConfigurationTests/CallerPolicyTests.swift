import CallerAuthentication
import Edge
import Testing

@testable import AppStoreDomain
@testable import Configuration

@Suite struct CallerPolicyTests {
    let apps = [
        GatewayConfiguration.App(
            name: "example", bundleId: "com.example.app", appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .auto),
        GatewayConfiguration.App(
            name: "second", bundleId: "com.example.second", appAppleId: 2, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .auto),
    ]

    func caller(_ identity: String) -> CallerIdentity { CallerIdentity(identity: identity, source: .jwt) }

    @Test func listedCallersUseTheirAppsByNameOrBundleID() {
        let policy = CallerPolicy(
            callers: [.init(identity: "billing", apps: ["example"], weight: 2), .init(identity: "ops", apps: ["*"])],
            apps: apps)
        guard case .success(let admitted?) = policy.admit(caller("billing")) else {
            Issue.record("billing refused")
            return
        }
        #expect(admitted.weight == 2 && admitted.listed)
        #expect(policy.authorize(admitted, app: "example") == nil)
        #expect(policy.authorize(admitted, app: "com.example.app") == nil)
        #expect(policy.authorize(admitted, app: "second") == .appNotAllowed(identity: "billing", app: "second"))
        #expect(policy.authorize(admitted, app: "nope") == .appNotAllowed(identity: "billing", app: "nope"))
        // Several apps: an empty name resolves to none, so only "*" passes (the handler then decides).
        #expect(policy.authorize(admitted, app: "") != nil)
        #expect(policy.authorize(caller("ops"), app: "") == nil)
        #expect(policy.authorize(caller("ops"), app: "nope") == nil)
    }

    @Test func unlistedAndAnonymousCallersAreRefusedUnlessOpen() {
        let closed = CallerPolicy(callers: [], apps: apps)
        #expect(closed.admit(caller("x")) == .failure(.unknownCaller(identity: "x")))
        #expect(closed.admit(nil) == .failure(.unknownCaller(identity: "")))
        #expect(closed.authorize(nil, app: "example") != nil)
        let open = CallerPolicy(callers: nil, apps: apps)
        #expect(open.admit(nil) == .success(nil))
        #expect(open.authorize(nil, app: "anything") == nil)
    }

    @Test func anEmptyNameMeansTheOnlyApp() {
        let policy = CallerPolicy(callers: [.init(identity: "b", apps: ["example"])], apps: [apps[0]])
        #expect(policy.authorize(caller("b"), app: "") == nil)
    }
}

@Suite struct AccessConfigurationTests {
    let base = """
        apps:
          - { name: example, bundleId: com.example.app, appAppleId: 1, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }
          - { name: second, bundleId: com.example.second, appAppleId: 2, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }

        """

    @Test func theDocumentedKeysLoad() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + """
                tls: { certificateFile: server.pem, privateKeyFile: server.key, clientCAFile: clients-ca.pem }
                authentication:
                  jwt: { jwksFile: jwks.json, issuer: "https://kubernetes.default.svc.cluster.local", audiences: [appstore-gateway] }
                callers:
                  - { identity: "system:serviceaccount:billing:api", apps: [example], weight: 1 }
                  - { identity: "spiffe://cluster.local/ns/ops/sa/x", apps: ["*", com.example.second], weight: 5 }
                  - { identity: "reports", apps: [com.example.second] }
                """)
        #expect(config.tls?.clientCAFile == "clients-ca.pem")
        #expect(config.authentication.jwt?.audiences == ["appstore-gateway"])
        #expect(config.callers?.map(\.weight) == [1, 5, 1])
        #expect(config.callers?[2].apps == ["second"])  // bundle ids resolve to names
    }

    @Test func absentCallersIsOpenAndAnEmptyListIsClosed() throws {
        #expect(try GatewayConfiguration.load(yaml: base).callers == nil)
        let closed = try GatewayConfiguration.load(
            yaml: base + """
                authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }
                callers: []
                """)
        #expect(closed.callers == [])
    }

    @Test func badAccessKeysAreNamed() throws {
        let cases: [(String, String)] = [
            ("tls: { privateKeyFile: k }", "tls.certificateFile"),
            ("tls: { certificateFile: c }", "tls.privateKeyFile"),
            ("authentication: { jwt: { issuer: i, audiences: [a] } }", "authentication.jwt.jwksFile"),
            ("authentication: { jwt: { jwksFile: j, audiences: [a] } }", "authentication.jwt.issuer"),
            ("authentication: { jwt: { jwksFile: j, issuer: i } }", "authentication.jwt.audiences"),
            ("callers: [{ identity: a, apps: [example] }]", "callers"),
            (
                "authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }\ncallers: [{ apps: [example] }]",
                "callers[0].identity"
            ),
            (
                "authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }\ncallers: [{ identity: a }]",
                "callers[0].apps"
            ),
            (
                "authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }\ncallers: [{ identity: a, apps: [nope] }]",
                "callers[0].apps[0]"
            ),
            (
                "authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }\ncallers: [{ identity: a, apps: [example], weight: 0 }]",
                "callers[0].weight"
            ),
            (
                "authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }\ncallers: [{ identity: a, apps: [example] }, { identity: a, apps: [example] }]",
                "callers[1].identity"
            ),
        ]
        for (yaml, key) in cases {
            let (_, problems) = try GatewayConfiguration.check(yaml: base + yaml)
            #expect(problems.map(\.key).contains(key), "\(yaml) → \(problems)")
        }
    }

    @Test func filesResolveAgainstTheConfigurationFolder() throws {
        var config = try GatewayConfiguration.load(
            yaml: base + """
                tls: { certificateFile: s.pem, privateKeyFile: /abs/s.key }
                authentication: { jwt: { jwksFile: jwks.json, issuer: i, audiences: [a] } }
                """)
        config.resolvePaths(relativeTo: "/etc/gw")
        #expect(config.tls?.certificateFile == "/etc/gw/s.pem" && config.tls?.privateKeyFile == "/abs/s.key")
        #expect(config.tls?.clientCAFile == "")
        #expect(config.authentication.jwt?.jwksFile == "/etc/gw/jwks.json")
    }
}

@Suite struct CallerPermissionsConfigurationTests {
    let base = """
        apps:
          - { name: example, bundleId: com.example.app, appAppleId: 1, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }
        authentication: { jwt: { jwksFile: j, issuer: i, audiences: [a] } }

        """

    @Test func permissionsAndTheRealtimeStreamLimitLoad() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + """
                callers:
                  - { identity: reader, apps: [example], permissions: [read] }
                  - { identity: team, apps: ["*"], permissions: [realtime, read, realtime], maxRealtimeStreams: 2 }
                  - { identity: everything, apps: ["*"] }
                """)
        let callers = try #require(config.callers)
        #expect(callers[0].permissions == .read && callers[0].maxRealtimeStreams == 4)
        #expect(callers[1].permissions == [.realtime, .read] && callers[1].maxRealtimeStreams == 2)
        // Absent: nil (warned about at start), and every permission granted.
        #expect(callers[2].permissions == nil && callers[2].granted == .all)
        let policy = CallerPolicy(callers: callers, apps: config.apps)
        #expect(policy.callersWithEveryPermission == ["everything"])
        guard case .success(let reader?) = policy.admit([.subject("reader")]) else {
            Issue.record("reader refused")
            return
        }
        #expect(reader.permissions == .read && reader.maxRealtimeStreams == 4)
        #expect(reader.refusal(needing: .read, method: "/s/Get") == nil)
        #expect(
            reader.refusal(needing: .write, method: "/s/Put")
                == .permissionNotGranted(identity: "reader", permission: .write, method: "/s/Put"))
        // Open mode admits callers holding every permission.
        let open = CallerPolicy(callers: nil, apps: config.apps)
        guard case .success(let anyone?) = open.admit([.subject("x")]) else {
            Issue.record("open mode refused")
            return
        }
        #expect(anyone.permissions == .all && anyone.refusal(needing: .sign, method: "/s/Sign") == nil)
    }

    @Test func badPermissionsAreNamed() throws {
        let cases: [(String, String)] = [
            ("callers: [{ identity: a, apps: [example], permissions: [read, admin] }]", "callers[0].permissions[1]"),
            ("callers: [{ identity: a, apps: [example], permissions: [READ] }]", "callers[0].permissions[0]"),
            ("callers: [{ identity: a, apps: [example], permissions: [] }]", "callers[0].permissions"),
            ("callers: [{ identity: a, apps: [example], permissions: read }]", "callers[0].permissions"),
            ("callers: [{ identity: a, apps: [example], maxRealtimeStreams: -1 }]", "callers[0].maxRealtimeStreams"),
            ("callers: [{ identity: a, apps: [example], maxRealtimeStreams: 257 }]", "callers[0].maxRealtimeStreams"),
        ]
        for (yaml, key) in cases {
            let (_, problems) = try GatewayConfiguration.check(yaml: base + yaml)
            #expect(problems.map(\.key).contains(key), "\(yaml) → \(problems)")
        }
    }

    @Test func permissionNamesReadBack() {
        for (name, permission) in CallerPermissions.named {
            #expect(CallerPermissions(named: name) == permission && permission.description == name)
        }
        #expect(CallerPermissions(named: "Read") == nil && CallerPermissions(named: "") == nil)
        #expect(CallerPermissions.all.description == "read,write,sign,realtime")
    }
}
