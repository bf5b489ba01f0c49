import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import Metrics
import Redis
import TestSupport
import Testing

@testable import AppStoreClient

/// The shared budget against a real redis-server (started per test on a free loopback port, no
/// persistence): the Lua script's bucket and block semantics, two replicas sharing them, and the local
/// fallback when Redis is unreachable.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct SharedRateBudgetTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)
    // 2/s: slow enough that a loaded machine's scheduling delays never refill a token between two steps.
    static let rate = EndpointRate(perSecond: 2, burst: 2)

    func budget(
        port: Int, prefix: String = "t:", recorder: Recorder = Recorder(), rate: EndpointRate = Self.rate
    ) -> SharedRateBudget {
        var settings = GatewayConfiguration.Redis()
        settings.url = RedisURL(host: "127.0.0.1", port: port)
        settings.keyPrefix = prefix
        return SharedRateBudget(
            settings: settings, limits: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate])),
            fallback: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: Self.rate]).scaled(by: 0.5)),
            appNames: [:], reservationHorizon: .milliseconds(300), metrics: recorder.metrics)
    }

    @Test func theSharedBucketAdmitsTheBurstThenSchedulesTokensAtTheRate() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        // One token per 2 s: Redis's own clock runs between the steps, and a loaded machine (the whole suite
        // in parallel on 2 cores) has taken more than 500 ms between two of them.
        let budget = budget(port: redis.port, rate: EndpointRate(perSecond: 0.5, burst: 2))
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        guard case .refused(let retryAfter) = await budget.reserve(key: key, now: now, maxWait: .zero) else {
            Issue.record("a third token was granted from a burst of 2")
            return
        }
        #expect(retryAfter > .zero && retryAfter <= .seconds(2))
        // A slot within maxWait is reserved and waited for inside the budget, which then lets the call go.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(3)) == .goNow)
        #expect(budget.currentMode == .shared)
    }

    /// Two replicas' budgets on one fresh Redis, handed to `body`, then shut down with it.
    func withTwoReplicas(_ body: (SharedRateBudget, SharedRateBudget) async throws -> Void) async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let first = budget(port: redis.port)
        let second = budget(port: redis.port)
        defer { first.shutdown(); second.shutdown() }
        try await body(first, second)
    }

    @Test func twoReplicasSpendOneBucketAndHonourOneBlock() async throws {
        try await withTwoReplicas { first, second in
            let now = MonotonicInstant(nanoseconds: 0)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await second.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) != .goNow)
            // Apple's 429 seen by the first replica holds the second.
            await first.block(key: key, for: .seconds(5), now: now)
            guard case .refused(let retryAfter) = await second.reserve(key: key, now: now, maxWait: .seconds(1)) else {
                Issue.record("the other replica ignored the shared block")
                return
            }
            #expect(retryAfter > .seconds(4) && retryAfter <= .seconds(5))
        }
    }

    @Test func aBlockStoredWhileACallWaitsForItsSlotHoldsThatCall() async throws {
        try await withTwoReplicas { first, second in
            let now = MonotonicInstant(nanoseconds: 0)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            // The second replica's caller gets a slot ~500 ms ahead; Apple's 429 reaches the first meanwhile.
            let waiting = Task { await second.reserve(key: key, now: now, maxWait: .seconds(1)) }
            await first.block(key: key, for: .seconds(5), now: now)
            guard case .refused(let retryAfter) = await waiting.value else {
                Issue.record("a call that waited for its slot went to Apple during a shared Retry-After")
                return
            }
            #expect(retryAfter > .seconds(4))
        }
    }

    @Test func aReplyLaterThanTheCommandTimeoutIsATimeoutNotAProtocolError() throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let connection = RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .milliseconds(50),
            limits: SharedRateBudget.replyLimits)
        try connection.connect()
        do {
            _ = try connection.pipeline([["BLPOP", "nothing-ever-arrives", "2"]])  // Redis answers after 2 s
            Issue.record("a reply 2 s late was not a timeout")
        } catch {
            #expect(error.kind == .timeout, "\(error.message)")
        }
        #expect(!connection.isConnected)
    }

    @Test func anUnreachableRedisFallsBackToTheLocalShareOnceTheSharedSlotsHavePassed() async throws {
        let port = try RedisProcess.freePort()  // nothing listens there
        let recorder = Recorder()
        let budget = budget(port: port, recorder: recorder)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        // Shared slots may have been reserved up to the horizon (300 ms) before Redis went: the local share
        // (1/s, burst 1) gives its first token one interval (1 s) after that, never earlier.
        guard case .refused(let retryAfter) = await budget.reserve(key: key, now: now, maxWait: .zero) else {
            Issue.record("a local token was given while shared slots could still be spent")
            return
        }
        #expect(retryAfter > .milliseconds(1_000) && retryAfter <= .milliseconds(1_300))
        // A caller who can wait that long gets the token: the outage costs a wait, not a failure.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(2)) == .goNow)
        #expect(budget.currentMode != .shared)
        #expect(recorder.outcomes[.fallback] != nil)
        #expect(recorder.fallbacks == 1 && recorder.mode != .shared)
    }

    @Test func aRestartedRedisIsFoundByTheProbeAndTheScriptReloaded() async throws {
        let port = try RedisProcess.freePort()
        let recorder = Recorder()
        let budget = budget(port: port, recorder: recorder)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        _ = await budget.reserve(key: key, now: now, maxWait: .seconds(1))
        #expect(budget.currentMode != .shared)
        let redis = try RedisProcess(port: port)
        defer { redis.stop() }
        var waited = 0
        while budget.currentMode != .shared && waited < 50 {
            try await Task.sleep(for: .milliseconds(100))
            waited += 1
        }
        #expect(budget.currentMode == .shared)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(recorder.fallbacks == 1 && recorder.mode == .shared)
    }
}

/// Reads the shared budget's series for assertions: reservations by outcome, fallbacks (one per loss of Redis)
/// and the mode the gauge shows now (shared again after a fallback: restored).
final class Recorder: Sendable {
    let metrics = SharedBudgetMetrics(registry: MetricsRegistry())

    var outcomes: [SharedBudgetOutcome: Int] {
        var counts: [SharedBudgetOutcome: Int] = [:]
        for (labels, counter) in metrics.reservations.series {
            counts[SharedBudgetOutcome(rawValue: labels[2])!, default: 0] += Int(counter.current)
        }
        return counts
    }
    var fallbacks: Int { Int(metrics.fallbacks.current) }
    var mode: SharedBudgetMode.State? {
        metrics.mode.series.first { $0.gauge.current == 1 }.flatMap {
            SharedBudgetMode.State(rawValue: $0.labelValues[0])
        }
    }
}
