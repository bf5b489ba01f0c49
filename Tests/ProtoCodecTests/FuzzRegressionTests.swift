import Foundation
import ProtoCodec
import TestSupport
import Testing

/// Replays fuzz/regressions (inputs that once crashed a libFuzzer target) and the seed corpus through the
/// entry points the targets in fuzz/Sources drive, so a fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] { FuzzInputs.of(target) }

    @Test func requestMessagesRoundTrip() throws {
        let inputs = Self.inputs("proto")
        #expect(!inputs.isEmpty)
        for bytes in inputs {
            if let message = try? VerifyJWSRequest(serializedBytes: bytes) {
                #expect(try VerifyJWSRequest(serializedBytes: message.serializedBytes()) == message)
            }
            if let message = try? GetHistoryRequest(serializedBytes: bytes) {
                #expect(try GetHistoryRequest(serializedBytes: message.serializedBytes()) == message)
            }
        }
    }
}
