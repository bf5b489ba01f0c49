import Cryptography
import Foundation
import SignedData
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

    private struct FixedClock: VerificationClock {
        func now() -> Date { Date(timeIntervalSince1970: 1_735_689_600) }
    }

    @Test func jwsInputs() throws {
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [Fixture.appleRoot()]), clock: FixedClock())
        let inputs = Self.inputs("jws")
        #expect(!inputs.isEmpty)
        for bytes in inputs { _ = verifier.verify(String(decoding: bytes, as: UTF8.self)) }
    }
}
