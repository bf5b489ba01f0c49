import GatewayFoundation

/// How many streams a client may reset before the server answered them: `burst` at once, refilled at
/// `perSecond`. Past it the connection ends with GOAWAY ENHANCE_YOUR_CALM "too_many_resets".
public struct UnansweredResetLimit: Sendable, Hashable {
    /// Resets a connection may send in a row before the rate applies.
    public var burst: Int
    /// Resets per second the budget regains, up to `burst`.
    public var perSecond: Int

    public init(burst: Int, perSecond: Int) {
        self.burst = burst
        self.perSecond = perSecond
    }
}

/// One connection's budget for RST_STREAM frames that cancel a stream the server has not answered yet (no
/// response head sent): the "rapid reset" pattern (CVE-2023-44487), where a client opens streams and cancels
/// them at once so that the server starts work the concurrency limit never bounds.
///
/// A reset of a stream already answered is not counted: that is how a gRPC client ends a server stream it has
/// read enough of, or cancels a call whose answer is on its way, and the server's work for it is done. (nghttp2's
/// own limit counts every RST_STREAM received, and ended busy grpcio connections with GOAWAY INTERNAL_ERROR.)
///
/// A token bucket in billionths of a reset, so the rate needs no floating point; time is injected.
struct ResetBudget: Sendable {
    private static let unit: Int64 = 1_000_000_000
    private let capacity: Int64
    private let perSecond: Int64
    private var credit: Int64
    private var updatedAt: MonotonicInstant

    /// A full budget at `now`.
    init(_ limit: UnansweredResetLimit, now: MonotonicInstant) {
        // Clamped so that `capacity` fits: a billion resets of burst is no limit at all anyway.
        let burst = Int64(min(max(limit.burst, 0), 1_000_000_000))
        capacity = burst * Self.unit
        perSecond = Int64(min(max(limit.perSecond, 0), 1_000_000_000))
        credit = capacity
        updatedAt = now
    }

    /// The client reset a stream the server had not answered, at `now`: false when that overdraws the budget.
    mutating func unansweredReset(now: MonotonicInstant) -> Bool {
        refill(now: now)
        guard credit >= Self.unit else { return false }
        credit -= Self.unit
        return true
    }

    private mutating func refill(now: MonotonicInstant) {
        guard now > updatedAt else { return }
        let elapsed = now.nanoseconds - updatedAt.nanoseconds
        updatedAt = now
        guard perSecond > 0 else { return }
        // Nanoseconds × resets per second = billionths of a reset; long pauses are capped before multiplying.
        let missing = capacity - credit
        let needed = (missing + perSecond - 1) / perSecond
        credit = elapsed >= needed ? capacity : credit + elapsed * perSecond
    }
}
