import GatewayFoundation

/// A token bucket: `burst` tokens at most, refilled at `perSecond` tokens per second.
///
/// Kept as a value type with integer state so it is exact under a manual clock: it stores the
/// instant at which the bucket will be full again minus one emission interval — the "theoretical
/// arrival time" of the generic cell rate algorithm (ITU-T I.371), which is a token bucket in
/// another form. A reservation moves that instant forward, so queued callers are admitted in
/// order, one emission interval apart, and the bucket never admits more than its rate allows.
package struct TokenBucket: Sendable, Hashable {
    /// Time between two tokens, in nanoseconds (rounded up, so the bucket errs towards admitting less).
    package let emissionInterval: Int64
    /// How many tokens the bucket holds when full.
    package let burst: Int
    /// When the next token after the current backlog would be due; at or before "now" means full.
    private var theoreticalArrival: MonotonicInstant

    /// A full bucket. `perSecond` must be positive, `burst` at least 1.
    package init(perSecond: Double, burst: Int, now: MonotonicInstant) {
        precondition(perSecond > 0 && perSecond.isFinite, "token bucket rate must be positive")
        precondition(burst >= 1, "token bucket burst must be at least 1")
        emissionInterval = Self.emissionInterval(perSecond: perSecond)
        self.burst = burst
        theoreticalArrival = now
    }

    /// Nanoseconds between two tokens at `perSecond` (positive), rounded up; clamped so absurd configurations
    /// (a token per century) cannot overflow the arithmetic.
    package static func emissionInterval(perSecond: Double) -> Int64 {
        Int64(min(max(1, (1e9 / perSecond).rounded(.up)), 1e18))
    }

    /// The result of `tryTake`.
    package enum TakeResult: Sendable, Hashable {
        /// A token was taken.
        case taken
        /// No token now; one will be available after this long.
        case refused(retryAfter: Duration)
    }

    /// The result of `reserve`.
    package enum Reservation: Sendable, Hashable {
        /// A token was taken; go now.
        case goNow
        /// A token is reserved for the caller; it must wait this long before sending.
        case goAfter(Duration)
        /// The wait would exceed the caller's limit; nothing was reserved. Retry after this long.
        case refused(retryAfter: Duration)
    }

    /// How far into the future the backlog may reach while still admitting now.
    private var tolerance: Int64 {
        let (product, overflow) = emissionInterval.multipliedReportingOverflow(by: Int64(burst - 1))
        return overflow ? .max / 4 : product
    }

    /// How long until a token is available at `now` (zero when one is).
    package func waitForToken(now: MonotonicInstant) -> Duration {
        let start = max(theoreticalArrival, now)
        let admitAt = start - .nanoseconds(tolerance)
        return admitAt > now ? admitAt - now : .zero
    }

    /// Whole tokens available at `now`.
    package func availableTokens(now: MonotonicInstant) -> Int {
        let backlog = max(theoreticalArrival, now).nanoseconds - now.nanoseconds
        let free = (tolerance + emissionInterval - backlog) / emissionInterval
        return Int(max(0, min(Int64(burst), free)))
    }

    /// Takes a token if one is available at `now`.
    package mutating func tryTake(now: MonotonicInstant) -> TakeResult {
        switch reserve(now: now, maxWait: .zero) {
        case .goNow: .taken
        case .goAfter(let wait), .refused(let wait): .refused(retryAfter: wait)
        }
    }

    /// Reserves the next token if it is due within `maxWait`: the caller either goes now or after the
    /// returned delay (the token is already theirs, so later callers queue behind them).
    package mutating func reserve(now: MonotonicInstant, maxWait: Duration) -> Reservation {
        let wait = waitForToken(now: now)
        if wait > maxWait { return .refused(retryAfter: wait) }
        theoreticalArrival = max(theoreticalArrival, now) + .nanoseconds(emissionInterval)
        return wait == .zero ? .goNow : .goAfter(wait)
    }

    /// Empties the bucket until `instant` (Apple's 429 `Retry-After`): no token before it, then one
    /// token at `instant` and refill at the normal rate from there. Earlier instants change nothing.
    package mutating func blockUntil(_ instant: MonotonicInstant) {
        theoreticalArrival = max(theoreticalArrival, instant + .nanoseconds(tolerance))
    }
}
