import AppStoreDomain
import Configuration
import Services
import SubscriptionState
import Testing

/// `apps[].entitlements` and `subscriptions.refundPolicy`: documented defaults, many-to-many mappings, and every
/// bad value refused naming its key.
@Suite struct SubscriptionStateConfigurationTests {
    func app(_ entitlements: String = "") -> String {
        """
        apps:
          - name: example
            bundleId: com.example.app
            appAppleId: 1
            issuerId: i
            keyId: ABCDEFGHIJ
            privateKeyFile: k.p8
        \(entitlements)
        """
    }

    func problem(_ yaml: String) -> String? {
        do {
            _ = try GatewayConfiguration.load(yaml: yaml)
            return nil
        } catch {
            return error.key
        }
    }

    @Test func byDefaultNoEntitlementAndRefundsEndAccessAtOnce() throws {
        let config = try GatewayConfiguration.load(yaml: app())
        #expect(config.apps[0].entitlements.isEmpty)
        #expect(config.subscriptions.refundPolicy == .immediate)
        #expect(config.subscriptions.policy(for: config.apps[0]) == SubscriptionPolicy.defaults)
        #expect(config.subscriptions.eventRetention == .seconds(30 * 86_400))
        #expect(config.subscriptions.appleReadWeight == 1)
        #expect(config.subscriptions.recordCacheSize == 2_048)
    }

    @Test func theRecordCacheHasASizeAndZeroTurnsItOff() throws {
        for size in [0, 50_000] {
            let config = try GatewayConfiguration.load(yaml: app() + "\nsubscriptions: {recordCacheSize: \(size)}")
            #expect(config.subscriptions.recordCacheSize == size)
        }
        for value in ["-1", "1000001", "many"] {
            #expect(problem(app() + "\nsubscriptions: {recordCacheSize: \(value)}") == "subscriptions.recordCacheSize")
        }
    }

    @Test func theStatesOwnReadsHaveAWeight() throws {
        let config = try GatewayConfiguration.load(yaml: app() + "\nsubscriptions: {appleReadWeight: 5}")
        #expect(config.subscriptions.appleReadWeight == 5)
    }

    @Test(arguments: ["0", "1001", "-1", "heavy"]) func aBadAppleReadWeightNamesTheKey(value: String) {
        #expect(problem(app() + "\nsubscriptions: {appleReadWeight: \(value)}") == "subscriptions.appleReadWeight")
    }

    @Test func eventRetentionIsADuration() throws {
        let config = try GatewayConfiguration.load(yaml: app() + "\nsubscriptions: {eventRetention: 7d}")
        #expect(config.subscriptions.eventRetention == .seconds(7 * 86_400))
    }

    @Test(arguments: ["30m", "500d", "soon", "-1d"]) func aBadEventRetentionNamesTheKey(value: String) {
        #expect(problem(app() + "\nsubscriptions: {eventRetention: \(value)}") == "subscriptions.eventRetention")
    }

    @Test func entitlementsMapNamesToProductsManyToMany() throws {
        let config = try GatewayConfiguration.load(
            yaml: app(
                """
                    entitlements:
                      premium: [com.example.monthly, com.example.yearly]
                      no_ads: [com.example.yearly]
                subscriptions: {refundPolicy: untilExpiry}
                """))
        #expect(
            config.apps[0].entitlements == [
                "premium": ["com.example.monthly", "com.example.yearly"], "no_ads": ["com.example.yearly"],
            ])
        let policy = config.subscriptions.policy(for: config.apps[0])
        #expect(policy.refundPolicy == .untilExpiry)
        #expect(policy.entitlementNames(unlockedBy: "com.example.yearly") == ["no_ads", "premium"])
    }

    @Test(arguments: [
        "    entitlements: [premium]",
        "    entitlements: {premium: []}",
        "    entitlements: {premium: com.example.monthly}",
        "    entitlements: {\"pre mium\": [com.example.monthly]}",
        "    entitlements: {premium: [\"\"]}",
    ])
    func badEntitlementsNameTheirKey(yaml: String) {
        #expect(problem(app(yaml))?.hasPrefix("apps[0].entitlements") == true)
    }

    @Test(arguments: ["never", "Immediate", "1"]) func aBadRefundPolicyNamesTheKey(value: String) {
        #expect(problem(app() + "\nsubscriptions: {refundPolicy: \(value)}") == "subscriptions.refundPolicy")
    }
}
