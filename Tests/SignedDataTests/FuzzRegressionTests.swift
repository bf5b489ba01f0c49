import Cryptography
import Foundation
import SignedData
import TestSupport
import Testing

/// Replays fuzz/regressions (inputs that once crashed a libFuzzer target) and the seed corpus through the
/// entry points the targets in fuzz/Sources drive, so a fixed crash stays fixed without a fuzzer build.
@Suite struct FuzzRegressionTests {
    private static func inputs(_ target: String) -> [[UInt8]] { FuzzInputs.of(target) }

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
