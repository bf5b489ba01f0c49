import AppStoreClient
import AppStoreDomain
import Configuration
import Testing

/// `GatewayConfiguration.check`: every bad key at once (for `check-config`), and the Apple transport rules.
@Suite struct ConfigurationCheckTests {
    @Test func everyBadKeyIsReportedOnce() throws {
        let yaml = """
            threads: x
            limits: {maxConcurrentStreams: 0}
            rateLimits: {getTransactionInfo: {perSecond: -1, burst: 3}}
            apps:
              - {bundleId: com.example.app, keyId: short, issuerId: i, privateKeyFile: k.p8, environment: sandbox}
            colour: blue
            """
        let (_, problems) = try GatewayConfiguration.check(yaml: yaml)
        // The bad app's other keys and the bad rate's burst are not also called unknown.
        #expect(
            problems.map(\.key) == [
                "threads", "limits.maxConcurrentStreams", "rateLimits.getTransactionInfo.perSecond", "apps[0].keyId",
                "colour",
            ])
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(yaml: yaml) }
    }

    @Test func appleURLsMustBeHTTPSUnlessAllowed() throws {
        let plain = "apple: {productionURL: 'http://127.0.0.1:8080'}"
        let (_, problems) = try GatewayConfiguration.check(yaml: plain)
        #expect(problems.map(\.key) == ["apple.productionURL"])
        let allowed = try GatewayConfiguration.load(
            yaml: "apple: {productionURL: 'http://127.0.0.1:8080', allowInsecureURL: true}")
        #expect(allowed.apple.productionURL == "http://127.0.0.1:8080")
        // Environment overrides go through the same rule.
        let (_, fromEnvironment) = try GatewayConfiguration.check(
            yaml: "", environment: ["APPSTORE_GATEWAY_APPLE_SANDBOX_URL": "http://example.com"])
        #expect(fromEnvironment.map(\.key) == ["apple.sandboxURL"])
    }

    @Test func caFilePinsUnlessSystemCAsAreTrusted() throws {
        let pinned = try GatewayConfiguration.load(yaml: "apple: {caFile: /ca.pem}")
        #expect(pinned.apple.caFile == "/ca.pem" && !pinned.apple.trustSystemCAs)
        let both = try GatewayConfiguration.load(yaml: "apple: {caFile: /ca.pem, trustSystemCAs: true}")
        #expect(both.apple.trustSystemCAs)
        #expect(GatewayConfiguration().apple.allowInsecureURL == false)
    }
}
