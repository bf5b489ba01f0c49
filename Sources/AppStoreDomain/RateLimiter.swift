import GatewayFoundation

/// Which budget a request spends: Apple limits per app and per endpoint, separately per environment.
package struct RateLimitKey: Sendable, Hashable, CustomStringConvertible {
    /// The app's bundle id.
    package var bundleID: String
    /// The endpoint called.
    package var endpoint: AppleEndpoint
    /// The environment called.
    package var environment: AppleEnvironment

    /// A key for one budget.
    package init(bundleID: String, endpoint: AppleEndpoint, environment: AppleEnvironment) {
        self.bundleID = bundleID
        self.endpoint = endpoint
        self.environment = environment
    }

    package var description: String { "\(bundleID)/\(endpoint)/\(environment)" }
}

/// The gateway's local view of Apple's rate limits: one `TokenBucket` per `RateLimitKey`, created
/// on first use from `RateLimits`, all behind one mutex (each operation is a few integer steps).
/// Keys come from configured apps, so the number of buckets is bounded by the configuration.
package final class RateLimiter: Sendable {
    private let limits: @Sendable (String) -> RateLimits
    private let buckets = Lock<[RateLimitKey: TokenBucket]>([:])

    /// A limiter using `defaults` for every app, except apps with their own entry in `perApp`
    /// (keyed by bundle id; `apps[].rateLimits` in the config).
    package init(defaults: RateLimits = .defaults, perApp: [String: RateLimits] = [:]) {
        limits = { perApp[$0] ?? defaults }
    }

    /// Reserves a token for `key` if one is due within `maxWait` (pass the smaller of the configured
    /// queueing limit and the caller's remaining deadline minus the time the call needs).
    /// `.goAfter` means the token is already reserved: sleep, then send without asking again.
    package func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) -> TokenBucket.Reservation {
        withBucket(key, now: now) { $0.reserve(now: now, maxWait: max(.zero, maxWait)) }
    }

    /// Takes a token for `key` only if one is available now.
    package func tryTake(key: RateLimitKey, now: MonotonicInstant) -> TokenBucket.TakeResult {
        withBucket(key, now: now) { $0.tryTake(now: now) }
    }

    /// Apple answered 429: no request for `key` before `instant` (see `TokenBucket.blockUntil`).
    package func blockUntil(_ instant: MonotonicInstant, key: RateLimitKey, now: MonotonicInstant) {
        withBucket(key, now: now) { $0.blockUntil(instant) }
    }

    /// Apple answered 429 with a wall-clock `Retry-After`: blocks `key` until `clock`'s wall time
    /// reaches `wallTime`, but for no longer than `cap` (see `RetryAfter.maximumDelay`).
    package func blockUntil(
        wallTime: WallTime, key: RateLimitKey, clock: some GatewayClock, cap: Duration = RetryAfter.maximumDelay
    ) {
        let now = clock.monotonicNow()
        let delay = RetryAfter.delay(until: wallTime, from: clock.wallNow(), cap: cap)
        blockUntil(now + delay, key: key, now: now)
    }

    /// Whole tokens currently available for `key` (for metrics and tests).
    package func availableTokens(key: RateLimitKey, now: MonotonicInstant) -> Int {
        withBucket(key, now: now) { $0.availableTokens(now: now) }
    }

    /// Whole tokens available in every bucket used so far, for the metrics scrape.
    package func levels(now: MonotonicInstant) -> [(key: RateLimitKey, tokens: Int)] {
        buckets.withLock { buckets in buckets.map { (key: $0.key, tokens: $0.value.availableTokens(now: now)) } }
    }

    /// The rate applied to `key`.
    package func rate(for key: RateLimitKey) -> EndpointRate {
        limits(key.bundleID).rate(for: key.endpoint, in: key.environment)
    }

    private func withBucket<Result: Sendable>(
        _ key: RateLimitKey, now: MonotonicInstant, _ body: (inout TokenBucket) -> Result
    ) -> Result {
        let rate = rate(for: key)
        return buckets.withLock { buckets in
            body(&buckets[key, default: TokenBucket(perSecond: rate.perSecond, burst: rate.burst, now: now)])
        }
    }
}

extension RateLimitRefusal {
    /// The refusal for `key` after `RateLimiter.reserve` answered `.refused(retryAfter:)` (or Apple's 429).
    package init(key: RateLimitKey, source: Source = .localBucket, retryAfter: Duration, app: String? = nil) {
        self.init(
            source: source, retryAfter: retryAfter, app: app ?? key.bundleID, endpoint: key.endpoint.configName,
            environment: key.environment)
    }
}
