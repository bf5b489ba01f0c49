import AppStoreDomain
import Configuration
import Services
import Testing

/// The `notifications.realtime` keys: the hosted realtime URL, its budget, bounds and each app's default answer.
@Suite struct RealtimeConfigurationTests {
    let base = """
        apps:
          - { name: example, bundleId: com.example.app, appAppleId: 1, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }
          - { name: second, bundleId: com.example.second, appAppleId: 2, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: k.p8 }
        notifications:
          webhook: { listen: "127.0.0.1:8080" }

        """

    func problems(_ yaml: String) throws -> [String] {
        try GatewayConfiguration.check(yaml: yaml).1.map(\.key)
    }

    @Test func offByDefault() throws {
        let config = try GatewayConfiguration.load(yaml: base)
        #expect(config.notifications.realtime.path == "")
        #expect(config.notifications.realtime.timeoutMilliseconds == 400)
        #expect(config.notifications.realtime.maxPendingPerStream == 64)
        #expect(config.notifications.realtime.maxStreams == 256)
        #expect(config.notifications.realtime.defaults.isEmpty)
        #expect(config.notifications.realtime.maxRequestAgeMilliseconds == 60_000)
    }

    @Test func theRequestAgeAdmittedIsConfigured() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + "  realtime: {path: /apple/realtime, maxRequestAge: 2m}\n")
        #expect(config.notifications.realtime.maxRequestAgeMilliseconds == 120_000)
        #expect(try problems(base + "  realtime: {maxRequestAge: 500ms}\n") == ["notifications.realtime.maxRequestAge"])
        #expect(try problems(base + "  realtime: {maxRequestAge: 2h}\n") == ["notifications.realtime.maxRequestAge"])
        #expect(try problems(base + "  realtime: {maxRequestAge: soon}\n") == ["notifications.realtime.maxRequestAge"])
    }

    @Test func theKeysLoadWithEachKindOfDefault() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + """
                  realtime:
                    path: /apple/realtime
                    timeout: 250ms
                    maxPendingPerStream: 8
                    maxStreams: 4
                    defaults:
                      - { app: example, messageIdentifier: A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890, productId: p, offerIdentifier: o, signature: v1 }
                      - { app: com.example.second, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890, productId: y, billingPlanType: MONTHLY }
                """)
        let realtime = config.notifications.realtime
        #expect(realtime.path == "/apple/realtime")
        #expect(realtime.timeoutMilliseconds == 250)
        #expect(realtime.maxPendingPerStream == 8 && realtime.maxStreams == 4)
        #expect(
            realtime.defaults["example"]
                == .promotionalOffer(
                    messageIdentifier: "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890", productId: "p", offerIdentifier: "o",
                    v1: true))
        #expect(
            realtime.defaults["second"]
                == .alternateProduct(
                    messageIdentifier: "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890", productId: "y",
                    billingPlanType: "MONTHLY"))
    }

    @Test func aMessageDefaultNeedsOnlyItsIdentifier() throws {
        let config = try GatewayConfiguration.load(
            yaml: base + """
                  realtime:
                    path: /apple/realtime
                    defaults: [{ app: example, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890 }]
                """)
        #expect(
            config.notifications.realtime.defaults["example"]
                == .message(messageIdentifier: "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"))
    }

    @Test func badValuesNameTheirKeys() throws {
        #expect(try problems("notifications: {realtime: {path: /apple/realtime}}") == ["notifications.realtime.path"])
        #expect(
            try problems(base + "  realtime: {path: /apple/notifications}\n") == ["notifications.realtime.path"])
        #expect(try problems(base + "  realtime: {path: nope}\n") == ["notifications.realtime.path"])
        #expect(try problems(base + "  realtime: {timeout: 5ms}\n") == ["notifications.realtime.timeout"])
        #expect(try problems(base + "  realtime: {timeout: 6s}\n") == ["notifications.realtime.timeout"])
        #expect(
            try problems(base + "  realtime: {maxPendingPerStream: 0}\n") == [
                "notifications.realtime.maxPendingPerStream"
            ])
        #expect(try problems(base + "  realtime: {maxStreams: 0}\n") == ["notifications.realtime.maxStreams"])
        #expect(
            try problems(
                base
                    + "  realtime: {defaults: [{app: nope, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890}]}\n"
            )
                == ["notifications.realtime.defaults[0].app"])
        #expect(
            try problems(base + "  realtime: {defaults: [{app: example, messageIdentifier: x}]}\n")
                == ["notifications.realtime.defaults[0].messageIdentifier"])
        #expect(
            try problems(
                base
                    + "  realtime: {defaults: [{app: example, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890, productId: p, offerIdentifier: o, signature: v3}]}\n"
            ) == ["notifications.realtime.defaults[0].signature"])
        #expect(
            try problems(
                base
                    + "  realtime: {defaults: [{app: example, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890}, {app: example, messageIdentifier: a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890}]}\n"
            ) == ["notifications.realtime.defaults[1].app"])
    }
}
