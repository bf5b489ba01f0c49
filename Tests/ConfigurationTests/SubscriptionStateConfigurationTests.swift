import Configuration
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
