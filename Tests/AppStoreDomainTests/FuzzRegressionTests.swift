import AppStoreDomain
import TestSupport
import Testing

/// Replays fuzz/regressions and the seed corpus of the apple-error target through `AppleErrorBody.parse`, so a
/// fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] { FuzzInputs.of(target) }

    @Test func appleErrorBodyInputs() {
        let inputs = Self.inputs("apple-error")
        #expect(!inputs.isEmpty)
        for bytes in inputs {
            _ = AppleErrorBody.parse(bytes, contentType: "application/json")
            _ = AppleErrorBody.parse(bytes, contentType: nil)
        }
    }
}
