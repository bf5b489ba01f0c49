import Foundation
import GatewayFoundation

/// One performance test of a realtime URL as Apple runs it: `totalRequests` realtime requests, at most
/// `maxConcurrentRequests` at a time, each answered within `responseTimeThreshold` or counted as failed; the test
/// passes when at least `successRateThreshold` percent succeed.
package struct PerformanceTestPlan: Sendable, Hashable, Codable {
    /// Apple's `requestId` of the test.
    package var requestId: String
    /// The realtime URL tested (Apple's `target`).
    package var target: String
    /// The bundle id whose realtime URL it is.
    package var bundleId: String
    /// "Production" or "Sandbox", as Apple names it in a realtime request.
    package var environment: String
    /// The original transaction id the test's requests name.
    package var originalTransactionId: String
    /// Apple's `maxConcurrentRequests`.
    package var maxConcurrentRequests: Int64
    /// Apple's `totalRequests`.
    package var totalRequests: Int64
    /// Apple's `totalDuration`, milliseconds.
    package var totalDurationMilliseconds: Int64
    /// Apple's `responseTimeThreshold`, milliseconds.
    package var responseTimeThresholdMilliseconds: Int64
    /// Apple's `successRateThreshold`, percent.
    package var successRateThreshold: Int64

    /// Apple's PerformanceTestConfig object.
    var configJSON: OrderedJSON {
        .object([
            ("maxConcurrentRequests", .integer(maxConcurrentRequests)), ("totalRequests", .integer(totalRequests)),
            ("totalDuration", .integer(totalDurationMilliseconds)),
            ("responseTimeThreshold", .integer(responseTimeThresholdMilliseconds)),
            ("successRateThreshold", .integer(successRateThreshold)),
        ])
    }
}

/// What happened to one request of a performance test.
package struct PerformanceTestAttempt: Sendable, Hashable, Codable {
    /// Apple's SendAttemptResult: "SUCCESS", "TIMED_OUT", "NO_RESPONSE", …
    package var result: String
    /// How long the realtime URL took to answer (or to fail), milliseconds.
    package var milliseconds: Int64

    /// An attempt.
    package init(result: String, milliseconds: Int64) {
        self.result = result
        self.milliseconds = milliseconds
    }
}

/// Sends a performance test's realtime requests to `plan.target` and reports each request's outcome, in any order.
///
/// This is the seam where the simulator calls the configured realtime URL: the simulator runs it in its own task
/// when a test starts and summarizes what it returns (`PerformanceTestSummary`). `SimulatorConfiguration`'s
/// default, `PerformanceTestSenders.simulated`, calls nothing.
package typealias PerformanceTestSender = @Sendable (PerformanceTestPlan) async -> [PerformanceTestAttempt]

/// The stock senders.
package enum PerformanceTestSenders {
    /// Calls no URL: every request succeeds, with response times drawn from the plan's request id (10 to 120 ms),
    /// so a test's results are reproducible.
    package static let simulated: PerformanceTestSender = { plan in
        var random = DeterministicRandom(seed: 0, stream: "performance-test/\(plan.requestId)")
        return (0..<max(0, plan.totalRequests)).map { _ in
            PerformanceTestAttempt(result: "SUCCESS", milliseconds: Int64(random.int(10...120)))
        }
    }
}

/// A finished performance test's numbers, as Apple's PerformanceTestResultResponse reports them.
struct PerformanceTestSummary: Sendable, Hashable, Codable {
    var passed: Bool
    /// Percent of the planned requests that succeeded, rounded down.
    var successRate: Int64
    /// Planned requests without an outcome.
    var numPending: Int64
    var average: Int64
    var p50: Int64
    var p90: Int64
    var p95: Int64
    var p99: Int64
    /// Failed requests by reason, sorted by reason.
    var failures: [String: Int64]

    /// Summarizes `attempts` against `plan`: a success slower than the threshold counts as TIMED_OUT; percentiles
    /// by nearest rank over every attempt's time.
    init(plan: PerformanceTestPlan, attempts: [PerformanceTestAttempt]) {
        let total = max(plan.totalRequests, 1)
        var successes: Int64 = 0
        var failures: [String: Int64] = [:]
        for attempt in attempts.prefix(Int(clamping: plan.totalRequests)) {
            if attempt.result == "SUCCESS" && attempt.milliseconds <= plan.responseTimeThresholdMilliseconds {
                successes += 1
            } else {
                failures[attempt.result == "SUCCESS" ? "TIMED_OUT" : attempt.result, default: 0] += 1
            }
        }
        let counted = min(Int64(attempts.count), plan.totalRequests)
        successRate = successes * 100 / total
        numPending = max(0, plan.totalRequests - counted)
        passed = numPending == 0 && successRate >= plan.successRateThreshold
        self.failures = failures
        let times = attempts.prefix(Int(clamping: plan.totalRequests)).map(\.milliseconds).sorted()
        func percentile(_ p: Int) -> Int64 {
            guard !times.isEmpty else { return 0 }
            let rank = (p * times.count + 99) / 100
            return times[max(0, min(times.count - 1, rank - 1))]
        }
        average = times.isEmpty ? 0 : times.reduce(0, +) / Int64(times.count)
        p50 = percentile(50)
        p90 = percentile(90)
        p95 = percentile(95)
        p99 = percentile(99)
    }

    /// The result members Apple adds once the test is over.
    func json(plan: PerformanceTestPlan) -> OrderedJSON {
        .object([
            ("config", plan.configJSON), ("target", .string(plan.target)),
            ("result", .string(passed ? "PASS" : "FAIL")),
            ("successRate", .integer(successRate)), ("numPending", .integer(numPending)),
            (
                "responseTimes",
                .object([
                    ("average", .integer(average)), ("p50", .integer(p50)), ("p90", .integer(p90)),
                    ("p95", .integer(p95)), ("p99", .integer(p99)),
                ])
            ),
            ("failures", .object(failures.keys.sorted().map { ($0, .integer(failures[$0] ?? 0)) })),
        ])
    }
}
