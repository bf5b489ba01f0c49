import Testing

@testable import AppStoreDomain
@testable import Configuration
@testable import GatewayFoundation

@Suite struct TokenBucketTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    @Test func burstThenRefusalWithExactWait() {
        var bucket = TokenBucket(perSecond: 50, burst: 50, now: start)
        for _ in 0..<50 { #expect(bucket.tryTake(now: start) == .taken) }
        #expect(bucket.tryTake(now: start) == .refused(retryAfter: .milliseconds(20)))
        #expect(bucket.availableTokens(now: start) == 0)
    }

    @Test func refillIsExact() {
        var bucket = TokenBucket(perSecond: 50, burst: 5, now: start)
        for _ in 0..<5 { _ = bucket.tryTake(now: start) }
        let almost = start + .nanoseconds(19_999_999)
        #expect(bucket.tryTake(now: almost) == .refused(retryAfter: .nanoseconds(1)))
        #expect(bucket.tryTake(now: start + .milliseconds(20)) == .taken)
        #expect(bucket.tryTake(now: start + .milliseconds(20)) == .refused(retryAfter: .milliseconds(20)))
        // A long idle period refills to the burst and no further.
        let later = start + .seconds(60)
        #expect(bucket.availableTokens(now: later) == 5)
        for _ in 0..<5 { #expect(bucket.tryTake(now: later) == .taken) }
        #expect(bucket.tryTake(now: later) != .taken)
    }

    @Test func fractionalRatesRoundTowardsFewerTokens() {
        var bucket = TokenBucket(perSecond: 0.1, burst: 1, now: start)
        #expect(bucket.tryTake(now: start) == .taken)
        #expect(bucket.tryTake(now: start) == .refused(retryAfter: .seconds(10)))
        #expect(TokenBucket(perSecond: 3, burst: 1, now: start).emissionInterval == 333_333_334)
        // Extreme settings stay in range instead of trapping.
        var extreme = TokenBucket(perSecond: 1e-15, burst: Int.max, now: start)
        #expect(extreme.tryTake(now: start) == .taken)
    }

    @Test func reservationsQueueOneIntervalApart() {
        var bucket = TokenBucket(perSecond: 10, burst: 1, now: start)
        #expect(bucket.reserve(now: start, maxWait: .seconds(1)) == .goNow)
        #expect(bucket.reserve(now: start, maxWait: .seconds(1)) == .goAfter(.milliseconds(100)))
        #expect(bucket.reserve(now: start, maxWait: .seconds(1)) == .goAfter(.milliseconds(200)))
        #expect(bucket.reserve(now: start, maxWait: .milliseconds(250)) == .refused(retryAfter: .milliseconds(300)))
        // The refusal reserved nothing: the next caller with patience gets the 300 ms slot.
        #expect(bucket.reserve(now: start, maxWait: .seconds(1)) == .goAfter(.milliseconds(300)))
    }

    @Test func blockUntilEmptiesTheBucketUntilThen() {
        var bucket = TokenBucket(perSecond: 50, burst: 50, now: start)
        let until = start + .seconds(2)
        bucket.blockUntil(until)
        #expect(bucket.availableTokens(now: start) == 0)
        #expect(bucket.tryTake(now: start + .seconds(1)) == .refused(retryAfter: .seconds(1)))
        #expect(bucket.tryTake(now: until) == .taken)
        #expect(bucket.tryTake(now: until) == .refused(retryAfter: .milliseconds(20)))
        // An earlier block does not shorten the current one.
        bucket.blockUntil(start)
        #expect(bucket.tryTake(now: until) != .taken)
    }
}

@Suite struct RateLimiterTests {
    let now = MonotonicInstant(nanoseconds: 0)
    func key(
        _ app: String = "com.a", _ endpoint: AppleEndpoint = .getTransactionHistory,
        env: AppleEnvironment = .production
    ) -> RateLimitKey {
        RateLimitKey(bundleID: app, endpoint: endpoint, environment: env)
    }

    @Test func defaultsFollowApplesTableWithSandboxFactor() {
        let limiter = RateLimiter()
        #expect(limiter.rate(for: key()) == EndpointRate(perSecond: 50, burst: 50))
        #expect(limiter.rate(for: key(env: .sandbox)) == EndpointRate(perSecond: 5, burst: 5))
        #expect(limiter.rate(for: key("x", .lookUpOrderId)) == EndpointRate(perSecond: 10, burst: 10))
        let mass = limiter.rate(for: key("x", .extendRenewalDatesForAllActiveSubscribers, env: .sandbox))
        #expect(mass.burst == 1 && abs(mass.perSecond - 0.1) < 1e-12)
    }

    @Test func overridesPerEndpointAndPerApp() throws {
        let custom = RateLimits(
            sandboxFactor: 0.5, overrides: [.getTransactionHistory: EndpointRate(perSecond: 4, burst: 2)])
        try custom.validate()
        let limiter = RateLimiter(perApp: ["com.b": custom])
        #expect(limiter.rate(for: key("com.b")) == EndpointRate(perSecond: 4, burst: 2))
        #expect(limiter.rate(for: key("com.b", env: .sandbox)) == EndpointRate(perSecond: 2, burst: 1))
        #expect(limiter.rate(for: key("com.a")) == EndpointRate(perSecond: 50, burst: 50))
        #expect(throws: ConfigurationError.self) { try RateLimits(sandboxFactor: 0).validate() }
        #expect(
            throws: ConfigurationError(key: "rateLimits.finishTransaction.burst", problem: "must be at least 1")
        ) {
            try RateLimits(overrides: [.finishTransaction: EndpointRate(perSecond: 1, burst: 0)]).validate()
        }
    }

    @Test func bucketsAreIsolated() {
        let limiter = RateLimiter(
            defaults: RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 1, burst: 1)]))
        #expect(limiter.tryTake(key: key(), now: now) == .taken)
        #expect(limiter.tryTake(key: key(), now: now) != .taken)
        #expect(limiter.tryTake(key: key("com.other"), now: now) == .taken)
        #expect(limiter.tryTake(key: key(env: .sandbox), now: now) == .taken)
        #expect(limiter.tryTake(key: key("com.a", .getTransactionInfo), now: now) == .taken)
    }

    @Test func blockUntilWallTimeUsesTheClock() {
        let clock = ManualClock()
        let limiter = RateLimiter()
        limiter.blockUntil(wallTime: clock.wallNow() + .milliseconds(1_500), key: key(), clock: clock)
        #expect(limiter.tryTake(key: key(), now: clock.monotonicNow()) == .refused(retryAfter: .milliseconds(1_500)))
        #expect(limiter.tryTake(key: key(env: .sandbox), now: clock.monotonicNow()) == .taken)
        clock.advance(by: .milliseconds(1_500))
        #expect(limiter.tryTake(key: key(), now: clock.monotonicNow()) == .taken)
        // A Retry-After years away blocks for the cap only.
        let other = key("com.far")
        limiter.blockUntil(wallTime: clock.wallNow() + .seconds(1_000_000), key: other, clock: clock)
        #expect(limiter.tryTake(key: other, now: clock.monotonicNow()) == .refused(retryAfter: .seconds(3600)))
    }

    @Test func refusalsNameTheirBucket() {
        let refusal = RateLimitRefusal(key: key(env: .sandbox), retryAfter: .milliseconds(250), app: "example")
        #expect(refusal.endpoint == "getTransactionHistory" && refusal.environment == .sandbox)
        #expect(RateLimitRefusal(key: key(), retryAfter: .zero).app == "com.a")
    }

    @Test func concurrentReservationsNeverOverAdmit() async {
        // 10/s, burst 5: within 1 s at most 5 + 10 = 15 requests may be scheduled; 200 callers race.
        let limiter = RateLimiter(
            defaults: RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 10, burst: 5)]))
        let k = key()
        let start = now
        let waits = await withTaskGroup(of: Duration?.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    switch limiter.reserve(key: k, now: start, maxWait: .seconds(1)) {
                    case .goNow: .zero
                    case .goAfter(let wait): wait
                    case .refused: nil
                    }
                }
            }
            var all: [Duration?] = []
            for await wait in group { all.append(wait) }
            return all
        }
        let admitted = waits.compactMap { $0 }.sorted()
        #expect(admitted.count == 15)
        #expect(admitted.filter { $0 == .zero }.count == 5)
        // Each admitted caller has its own slot, one emission interval (100 ms) apart after the burst.
        #expect(Array(admitted.dropFirst(5)) == (1...10).map { Duration.milliseconds(100 * $0) })
    }
}

@Suite struct AppleEndpointTests {
    @Test func catalogueMatchesSection4() {
        #expect(AppleEndpoint.allCases.count == 38)
        #expect(AppleEndpoint.allCases.filter(\.isRetentionMessaging).count == 14)
        #expect(AppleEndpoint.configureDefaultMessage.defaultProductionRate == 10)
        #expect(AppleEndpoint.uploadImage.defaultProductionRate == 1)
        #expect(AppleEndpoint.deleteImage.method == .delete)
        #expect(AppleEndpoint.initiatePerformanceTest.method == .post)
        #expect(AppleEndpoint.uploadImage.requestContentType == "image/png")
        #expect(AppleEndpoint.uploadMessage.requestContentType == "application/json")
        #expect(
            AppleEndpoint.getDefaultMessage.path("com.example.monthly", "en-US")
                == "/inApps/v1/messaging/default/com.example.monthly/en-US")
        #expect(AppleEndpoint.allCases.filter { $0.pathTemplate.hasPrefix("/advancedCommerce/v") }.count == 6)
        #expect(AppleEndpoint.getTransactionHistory.configName == "getTransactionHistory")
        #expect(AppleEndpoint.getNotificationHistory.method == .post)
        #expect(AppleEndpoint.setAppAccountToken.method == .put)
        #expect(AppleEndpoint.getRefundHistory.defaultProductionRate == 10)
        #expect(AppleEndpoint.requestTestNotification.defaultProductionRate == 1)
    }

    @Test func advancedCommerceEndpointsArePostsRepeatedThroughTheirReference() {
        let advanced: [AppleEndpoint] = [
            .cancelSubscription, .revokeSubscription, .changeSubscriptionPrice, .changeSubscriptionMetadata,
            .migrateSubscription, .requestTransactionRefund,
        ]
        #expect(AppleEndpoint.allCases.filter { $0.pathTemplate.hasPrefix("/advancedCommerce/v1/") } == advanced)
        for endpoint in advanced {
            #expect(endpoint.method == .post && endpoint.isIdempotent && !endpoint.isRead)
        }
        #expect(AppleEndpoint.cancelSubscription.path("7") == "/advancedCommerce/v1/subscription/cancel/7")
        #expect(
            AppleEndpoint.requestTransactionRefund.path("8") == "/advancedCommerce/v1/transaction/requestRefund/8")
    }

    /// Apple's "Identifying rate limits for Advanced Commerce APIs": 5/s for the writes that end or refund a
    /// subscription, 50/s for those that change it; sandbox at 10 %.
    @Test func advancedCommerceRatesAreApplesTable() {
        let rates: [AppleEndpoint: Double] = [
            .cancelSubscription: 5, .revokeSubscription: 5, .requestTransactionRefund: 5,
            .changeSubscriptionPrice: 50, .changeSubscriptionMetadata: 50, .migrateSubscription: 50,
        ]
        for (endpoint, perSecond) in rates {
            #expect(endpoint.defaultProductionRate == perSecond, "\(endpoint)")
            #expect(RateLimits.defaults.rate(for: endpoint, in: .production).burst == Int(perSecond))
            #expect(RateLimits.defaults.rate(for: endpoint, in: .sandbox).perSecond == perSecond * 0.1)
        }
    }

    @Test func pathsArePercentEncoded() {
        #expect(AppleEndpoint.getTransactionHistory.path("2000000123") == "/inApps/v2/history/2000000123")
        #expect(AppleEndpoint.setAppAccountToken.path("1/2") == "/inApps/v1/transactions/1%2F2/appAccountToken")
        #expect(
            AppleEndpoint.getStatusOfSubscriptionRenewalDateExtensions.path("p.1", "r 2")
                == "/inApps/v1/subscriptions/extend/mass/p.1/r%202")
        #expect(AppleEndpoint.getNotificationHistory.path() == "/inApps/v1/notifications/history")
        #expect(AppleEndpoint.getTransactionInfo.path() == nil)
        #expect(AppleEndpoint.getNotificationHistory.path("x") == nil)
    }
}
