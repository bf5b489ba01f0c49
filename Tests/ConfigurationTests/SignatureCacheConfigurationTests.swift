import AppStoreDomain
import SignedData
import Testing

@testable import Configuration

/// `verification.signatureCacheSize`: documented default, 0 turns the cache off, out-of-range values are
/// refused naming the key, and the environment overrides it like any scalar key.
@Suite struct SignatureCacheConfigurationTests {
    @Test func theDefaultIs4096() throws {
        #expect(try GatewayConfiguration.load(yaml: "").verification.signatureCacheSize == 4096)
    }

    @Test func zeroTurnsItOffAndTheEnvironmentOverrides() throws {
        let off = try GatewayConfiguration.load(yaml: "verification: {signatureCacheSize: 0}")
        #expect(off.verification.signatureCacheSize == 0)
        let overridden = try GatewayConfiguration.load(
            yaml: "verification: {signatureCacheSize: 10}",
            environment: ["APPSTORE_GATEWAY_VERIFICATION_SIGNATURE_CACHE_SIZE": "0"])
        #expect(overridden.verification.signatureCacheSize == 0)
    }

    @Test(arguments: ["-1", "1000001", "lots"]) func badValuesNameTheKey(value: String) {
        do {
            _ = try GatewayConfiguration.load(yaml: "verification: {signatureCacheSize: \(value)}")
            Issue.record("\(value) was accepted")
        } catch {
            #expect(error.key == "verification.signatureCacheSize")
        }
    }
}
