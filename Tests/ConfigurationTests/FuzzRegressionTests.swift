import Configuration
import Foundation
import TestSupport
import Testing

/// Replays fuzz/regressions (inputs that once crashed a libFuzzer target) and the seed corpus through the
/// entry points the targets in fuzz/Sources drive, so a fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] { FuzzInputs.of(target) }

    @Test func configurationInputs() {
        let inputs = Self.inputs("config")
        #expect(!inputs.isEmpty)
        for bytes in inputs {
            _ = try? GatewayConfiguration.load(
                yaml: String(decoding: bytes, as: UTF8.self), environment: ["APPSTORE_GATEWAY_LOGGING_LEVEL": "debug"])
        }
    }
}
