import AppStoreDomain
import SignedData
import Testing

@testable import Configuration

/// The keys issue 17 adds: online checks, `environment: xcode` apps, and the status of a revocation status that
/// cannot be learnt.
@Suite struct ShapesConfigurationTests {
    @Test func onlineChecksDefaultOffAndLoad() throws {
        let defaults = try GatewayConfiguration.load(yaml: "")
        #expect(defaults.verification.onlineChecks == GatewayConfiguration.OnlineChecks())
        #expect(!defaults.verification.onlineChecks.enabled)
        let config = try GatewayConfiguration.load(
            yaml: """
                verification:
                  onlineChecks: true
                  ocspTimeout: 750ms
                  ocspCacheSize: 10
                """)
        #expect(config.verification.onlineChecks.enabled)
        #expect(config.verification.onlineChecks.timeout == .milliseconds(750))
        #expect(config.verification.onlineChecks.cacheSize == 10)
        let fromEnvironment = try GatewayConfiguration.load(
            yaml: "", environment: ["APPSTORE_GATEWAY_VERIFICATION_ONLINE_CHECKS": "true"])
        #expect(fromEnvironment.verification.onlineChecks.enabled)
    }

    @Test(arguments: ["ocspTimeout: 0s", "ocspTimeout: 2m", "ocspCacheSize: 0", "onlineChecks: maybe"])
    func badOnlineCheckValuesAreRefused(line: String) {
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(yaml: "verification:\n  \(line)\n") }
    }

    @Test func anXcodeAppNeedsNoKey() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                apps:
                  - name: local
                    bundleId: com.example.local
                    environment: xcode
                """)
        #expect(config.apps[0].environment == .xcode)
        #expect(config.apps[0].privateKeyFile.isEmpty && config.apps[0].keyId.isEmpty)
        // Any other app still needs its key settings.
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.load(
                yaml: """
                    apps:
                      - name: store
                        bundleId: com.example.store
                        environment: sandbox
                    """)
        }
        // A key given to an Xcode app is still checked.
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.load(
                yaml: """
                    apps:
                      - bundleId: com.example.local
                        environment: xcode
                        keyId: short
                    """)
        }
    }
}
