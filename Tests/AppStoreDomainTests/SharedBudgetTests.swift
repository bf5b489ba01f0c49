import AppStoreClient
import Redis
import Testing

@testable import AppStoreDomain
@testable import Configuration
@testable import GatewayFoundation

@Suite struct SharedBudgetModeTests {
    let start = MonotonicInstant(nanoseconds: 5_000_000_000)

    @Test func failureFallsBackOnceAndProbesAfterTheBackoff() {
        var mode = SharedBudgetMode(initialBackoff: .milliseconds(250), maxBackoff: .seconds(2))
        #expect(mode.route == .redis)
        #expect(mode.redisAnswered() == nil)
        #expect(mode.redisFailed(now: start) == .fellBack)
        #expect(mode.route == .local)
        // A second failure while already falling back is not a new transition.
        #expect(mode.redisFailed(now: start) == nil)
        #expect(mode.backoff == .milliseconds(500))
        #expect(!mode.probeDue(now: start + .milliseconds(499)))
        #expect(mode.probeDue(now: start + .milliseconds(500)))
    }

    @Test func failedProbesDoubleTheBackoffUpToTheMaximum() {
        var mode = SharedBudgetMode(initialBackoff: .milliseconds(250), maxBackoff: .seconds(2))
        _ = mode.redisFailed(now: start)
        var backoffs: [Duration] = []
        for _ in 0..<5 {
            mode.probeStarted()
            #expect(mode.state == .probing)
            #expect(mode.route == .local)
            #expect(mode.redisFailed(now: start) == nil)
            backoffs.append(mode.backoff)
        }
        #expect(backoffs == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
    }

    @Test func aSuccessfulProbeRestoresTheSharedBudgetOnce() {
        var mode = SharedBudgetMode()
        _ = mode.redisFailed(now: start)
        mode.probeStarted()
        #expect(mode.redisAnswered() == .restored)
        #expect(mode.state == .shared)
        #expect(mode.route == .redis)
        #expect(mode.nextProbe == nil)
        #expect(mode.redisAnswered() == nil)
        // The next outage starts from the initial back-off again.
        #expect(mode.redisFailed(now: start) == .fellBack)
        #expect(mode.backoff == mode.initialBackoff)
    }

    @Test func noProbeIsDueWhileShared() {
        let mode = SharedBudgetMode()
        #expect(!mode.probeDue(now: start + .seconds(3600)))
    }
}

@Suite struct SharedBucketScriptTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)

    @Test func keysFollowThePrefixAppEndpointEnvironmentLayout() {
        #expect(
            SharedBucketScript.bucketKey(key, prefix: "gw:")
                == "gw:bucket:com.example.app:getTransactionHistory:production")
        #expect(
            SharedBucketScript.blockKey(key, prefix: "gw:")
                == "gw:block:com.example.app:getTransactionHistory:production")
    }

    @Test func takeArgumentsCarryTheIntervalBurstAndEachWaitInMicroseconds() {
        let arguments = SharedBucketScript.takeArguments(
            key: key, rate: EndpointRate(perSecond: 3, burst: 2), maxWaits: [.zero, .milliseconds(1500), .seconds(-1)],
            prefix: "p:")
        #expect(
            arguments == [
                "2", "p:bucket:com.example.app:getTransactionHistory:production",
                "p:block:com.example.app:getTransactionHistory:production", "take", "333334", "2", "0", "1500000", "0",
            ])
    }

    @Test func blockArgumentsAreClampedToAMillisecondAndAnHour() {
        #expect(SharedBucketScript.blockArguments(key: key, delay: .zero, prefix: "").last == "1")
        #expect(SharedBucketScript.blockArguments(key: key, delay: .seconds(86_400), prefix: "").last == "3600000")
        #expect(SharedBucketScript.blockArguments(key: key, delay: .microseconds(2500), prefix: "").last == "3")
    }

    @Test func repliesDecodeToReservations() {
        let decoded = SharedBucketScript.reservations(fromTakeReply: [0, 250_000, -1, -400_001], requested: 4)
        #expect(
            decoded == [
                .goNow, .goAfter(.milliseconds(250)), .refused(retryAfter: .zero),
                .refused(retryAfter: .milliseconds(400)),
            ])
    }

    @Test func hostileRepliesAreRejectedOrBounded() {
        #expect(SharedBucketScript.reservations(fromTakeReply: [0], requested: 2) == nil)
        #expect(
            SharedBucketScript.reservations(fromTakeReply: [.min], requested: 1)
                == [.refused(retryAfter: .seconds(3600))])
    }

    @Test func scaledLimitsKeepABurstOfAtLeastOne() {
        let limits = RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 10, burst: 2)]).scaled(
            by: 1.0 / 3)
        let rate = limits.rate(for: .getTransactionHistory, in: .production)
        #expect(abs(rate.perSecond - 10.0 / 3) < 1e-9)
        #expect(rate.burst == 1)
        // Endpoints left at Apple's defaults are scaled too.
        #expect(
            limits.rate(for: .getTransactionInfo, in: .production).perSecond
                < AppleEndpoint.getTransactionInfo.defaultProductionRate)
    }
}

@Suite struct RedisConfigurationTests {
    @Test func absentRedisMeansPerReplicaBucketsWithDocumentedDefaults() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.redis.url == nil)
        #expect(config.redis.keyPrefix == "appstore-gateway:")
        #expect(config.redis.timeout == .milliseconds(50))
        #expect(abs(config.redis.fallbackShare - 1.0 / 3) < 1e-12)
    }

    @Test func theRedisBlockIsRead() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                redis:
                  url: redis://:s3cret@10.0.0.5:6380/2
                  keyPrefix: "team-a:"
                  timeout: 20ms
                  fallbackShare: 1/6
                """)
        #expect(config.redis.url == RedisURL(host: "10.0.0.5", port: 6380, database: 2, password: "s3cret"))
        #expect(config.redis.keyPrefix == "team-a:")
        #expect(config.redis.timeout == .milliseconds(20))
        #expect(abs(config.redis.fallbackShare - 1.0 / 6) < 1e-12)
    }

    @Test func environmentOverridesTheURL() throws {
        let config = try GatewayConfiguration.load(
            yaml: "", environment: ["APPSTORE_GATEWAY_REDIS_URL": "redis://redis.default.svc"])
        #expect(config.redis.url == RedisURL(host: "redis.default.svc"))
    }

    @Test(arguments: [
        "redis:\n  url: http://x", "redis:\n  url: redis://host:0", "redis:\n  url: redis://host/abc",
        "redis:\n  timeout: 0ms", "redis:\n  fallbackShare: 0", "redis:\n  fallbackShare: 3/0",
        "redis:\n  fallbackShare: 2", "redis:\n  unknownKey: 1",
    ])
    func badValuesAreRejectedNamingTheKey(yaml: String) {
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.load(yaml: yaml) }
    }

    @Test func passwordsNeverAppearInDescriptionsOrErrors() throws {
        let url = try #require(RedisURL(parsing: "redis://user:hunter2@[::1]:7000/1"))
        #expect(url.host == "::1" && url.port == 7000 && url.database == 1 && url.username == "user")
        #expect(!url.description.contains("hunter2"))
        do {
            _ = try GatewayConfiguration.load(yaml: "redis:\n  url: redis://:hunter2@host:99999")
            Issue.record("an invalid port was accepted")
        } catch {
            #expect(!"\(error)".contains("hunter2"))
        }
    }
}
