import Foundation
import TestSupport
import Testing

@testable import GRPC

/// Replays fuzz/regressions (inputs that once crashed a libFuzzer target) and the seed corpus through the
/// entry points the targets in fuzz/Sources drive, so a fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] { FuzzInputs.of(target) }

    @Test func deframerInputs() {
        let inputs = Self.inputs("deframer")
        #expect(!inputs.isEmpty)
        for input in inputs where !input.isEmpty {
            let chunk = Int(input[0]) + 1
            var deframer = MessageDeframer(maxMessageSize: 64 * 1024, compressionAllowed: input[0] & 1 == 1)
            var offset = 1
            var total = 0
            feeding: while offset < input.count {
                let end = min(input.count, offset + chunk)
                input[offset..<end].withUnsafeBytes { deframer.append($0) }
                offset = end
                do {
                    while let message = try deframer.next() { total += message.count + 5 }
                } catch {
                    break feeding
                }
            }
            #expect(total <= input.count)
        }
    }
}
