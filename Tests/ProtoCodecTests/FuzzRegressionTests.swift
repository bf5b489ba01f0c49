import Foundation
import ProtoCodec
import Testing
/// Replays fuzz/regressions (inputs that once crashed a libFuzzer target) and the seed corpus through the
/// entry points the targets in fuzz/Sources drive, so a fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] {
        var root = #filePath
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        return ["regressions", "corpus"].flatMap { folder -> [[UInt8]] in
            let directory = URL(fileURLWithPath: root).appendingPathComponent("fuzz/\(folder)/\(target)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().compactMap { try? Array(Data(contentsOf: directory.appendingPathComponent($0))) }
        }
    }

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
