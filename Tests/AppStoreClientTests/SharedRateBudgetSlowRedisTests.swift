import AppStoreDomain
import Configuration
import GatewayFoundation
import Redis
import TestSupport
import Testing

@testable import AppStoreClient

/// The shared budget before a Redis that answers, but too slowly: a reply trickled byte by byte is "slower
/// than `redis.timeout`" and engages the local fallback, and while on the fallback no caller waits for the
/// budget thread, even when its probe of Redis hangs.
@Suite(.serialized)
struct SharedRateBudgetSlowRedisTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)
    static let rate = EndpointRate(perSecond: 2, burst: 2)
    /// 300 bytes at 10 ms each: 3 s, where `redis.timeout` is 100 ms.
    static let reply = Array(("+" + String(repeating: "x", count: 297) + "\r\n").utf8)

    func budget(port: Int, timeout: Duration, recorder: Recorder) -> SharedRateBudget {
        var settings = GatewayConfiguration.Redis()
        settings.url = RedisURL(host: "127.0.0.1", port: port)
        settings.keyPrefix = "t:"
        settings.timeout = timeout
        return SharedRateBudget(
            settings: settings,
            limits: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: Self.rate])),
            fallback: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: Self.rate]).scaled(by: 0.5)),
            appNames: [:], reservationHorizon: .milliseconds(300), metrics: recorder.metrics)
    }

    @Test func aTrickledReplyFallsBackAtTheTimeoutInsteadOfWaitingForItsEnd() async throws {
        let redis = try TricklingRedis(reply: Self.reply, interval: .milliseconds(10))
        defer { redis.stop() }
        let recorder = Recorder()
        let budget = budget(port: redis.port, timeout: .milliseconds(100), recorder: recorder)
        defer { budget.shutdown() }
        // The script load is answered by the trickle: the deadline passes long before its last byte.
        let reservation = await budget.reserve(key: key, now: MonotonicInstant(nanoseconds: 0), maxWait: .zero)
        #expect(redis.bytesSent < Self.reply.count, "the budget waited for the whole trickled reply")
        guard case .refused = reservation else {
            Issue.record("a local token was given while shared slots could still be spent: \(reservation)")
            return
        }
        #expect(recorder.outcomes == [.fallback: 1])
        #expect(recorder.fallbacks == 1 && recorder.mode != .shared)
        #expect(budget.currentMode != .shared)
    }

    @Test func onTheFallbackCallersDoNotWaitForAProbeInFlight() async throws {
        let port = try RedisProcess.freePort()  // nothing listens there: the first reservation falls back
        let recorder = Recorder()
        // A long timeout, so that the probe below is still waiting when the caller asks.
        let budget = budget(port: port, timeout: .seconds(30), recorder: recorder)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        _ = await budget.reserve(key: key, now: now, maxWait: .zero)
        #expect(budget.currentMode == .fallback)
        // Now a Redis that accepts and never answers: the probe (after 250 ms) connects and waits.
        let redis = try TricklingRedis(port: port, reply: [], interval: nil)
        defer { redis.stop() }
        var polls = 0
        while budget.currentMode != .probing && polls < 200 {
            try await Task.sleep(for: .milliseconds(50))
            polls += 1
        }
        try #require(budget.currentMode == .probing, "no probe started")
        // Answered by the local bucket while the probe still waits for Redis.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(3)) == .goNow)
        #expect(budget.currentMode == .probing, "the reservation waited for the probe to end")
        #expect(recorder.outcomes == [.fallback: 2])
    }
}
