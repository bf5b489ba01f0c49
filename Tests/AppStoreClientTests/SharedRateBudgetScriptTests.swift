import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import Redis
import TestSupport
import Testing

@testable import AppStoreClient

/// The shared budget's script runs by SHA (EVALSHA), loaded once per connection; a Redis that lost its
/// script cache answers NOSCRIPT and gets the script again, without a fallback to the local share.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct SharedRateBudgetScriptTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)

    private func calls(_ command: String, _ connection: RedisConnection) throws -> Int {
        let text = try connection.pipeline([["INFO", "commandstats"]]).first?.text ?? ""
        return RedisProcess.infoNumber("cmdstat_\(command):calls=", in: text)
    }

    @Test func theScriptIsSentOnceAndReloadedAfterAFlushedScriptCache() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        var settings = GatewayConfiguration.Redis()
        settings.url = RedisURL(host: "127.0.0.1", port: redis.port)
        settings.keyPrefix = "s:"
        let rate = EndpointRate(perSecond: 1000, burst: 1000)
        let recorder = Recorder()
        let budget = SharedRateBudget(
            settings: settings, limits: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate])),
            fallback: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate])),
            appNames: [:], reservationHorizon: .milliseconds(300), metrics: recorder.metrics)
        defer { budget.shutdown() }
        let admin = RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .seconds(2), limits: .administration)
        try admin.connect()
        let now = MonotonicInstant(nanoseconds: 0)
        for _ in 0..<5 { #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow) }
        #expect(try calls("evalsha", admin) == 5)
        #expect(try calls("eval", admin) == 0)
        let loads = try calls("script|load", admin)
        #expect(loads == 1)

        _ = try admin.pipeline([["SCRIPT", "FLUSH"]])
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(try calls("script|load", admin) == loads + 1)
        #expect(budget.currentMode == .shared)
        #expect(recorder.outcomes[.fallback] == nil)
    }
}
