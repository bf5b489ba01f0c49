import GatewayFoundation

/// Where an Apple call spends its rate-limit token: this replica's `RateLimiter`, or a budget shared by
/// every replica (the Redis-backed shared budget). Callers see the same reservation semantics either way.
package protocol RateBudget: Sendable {
    /// Reserves a token for `key` if one is due within `maxWait` (see `RateLimiter.reserve`).
    func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation
    /// Apple answered 429: no request for `key` for `delay` from `now` (already capped by the caller).
    func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async
}

extension RateLimiter: RateBudget {
    /// Empties `key`'s bucket for `delay` (see `TokenBucket.blockUntil`).
    package func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) {
        blockUntil(now + max(.zero, delay), key: key, now: now)
    }
}

extension RateLimits {
    /// These limits at `share` of their rate and burst (burst at least 1), for one replica's part of a
    /// budget shared with others. Every endpoint gets an explicit rate, so Apple's defaults are scaled too.
    package func scaled(by share: Double) -> RateLimits {
        let factor = min(max(share, 0.000_001), 1)
        var scaled = self
        for endpoint in AppleEndpoint.allCases {
            let rate = self.rate(for: endpoint, in: .production)
            scaled.overrides[endpoint] = EndpointRate(
                perSecond: rate.perSecond * factor, burst: max(1, Int((Double(rate.burst) * factor).rounded(.down))))
        }
        return scaled
    }
}
