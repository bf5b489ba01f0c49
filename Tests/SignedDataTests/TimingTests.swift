import Foundation
import SignedData
import Testing

/// Per-verification cost, printed; run only when VERIFIER_TIMING=1, ideally in release:
/// `VERIFIER_TIMING=1 swift test -c release -Xswiftc -enable-testing --filter TimingTests`
@Suite(.enabled(if: ProcessInfo.processInfo.environment["VERIFIER_TIMING"] == "1"))
struct TimingTests {
    @Test func warmAndColdVerification() throws {
        let jws = try Fixture.jws("renewal-Sandbox-2")  // 2025 leaf, cacheable until 2027
        func measure(cacheCapacity: Int, iterations: Int) throws -> Double {
            var configuration = SignedDataVerifier.Configuration(trustedRoots: [try Fixture.appleRoot()])
            configuration.chainCacheCapacity = cacheCapacity
            let verifier = try SignedDataVerifier(configuration: configuration)
            #expect(verifier.verify(jws).isVerified)
            let start = ContinuousClock.now
            for _ in 0..<iterations where !verifier.verify(jws).isVerified { Issue.record("verification failed") }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            return seconds / Double(iterations) * 1e6
        }
        let warm = try measure(cacheCapacity: 256, iterations: 5000)
        let cold = try measure(cacheCapacity: 0, iterations: 1000)
        print(
            "TIMING warm \(String(format: "%.1f", warm)) µs/verify (\(Int(1e6 / warm))/s), cold \(String(format: "%.1f", cold)) µs/verify (\(Int(1e6 / cold))/s)"
        )
    }
}
