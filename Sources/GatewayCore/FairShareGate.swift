/// The decisions of one bucket's fair-share pump (the I/O wrapper is the Apple client's fair-share budget):
/// who waits, what the pump asks the bucket next, and who gets each answer. Pure state, time passed in.
///
/// The pump runs `turn` → (the bucket's reservation with the returned `maxWait`) → `answered` → (a sleep
/// until the returned instant, if any) → `turn` …, until `turn` says nobody waits.
public struct FairShareGate<Ticket: Hashable & Sendable>: Sendable {
    /// One answer for one waiting call.
    public struct Answer: Sendable, Hashable {
        /// The call.
        public var ticket: Ticket
        /// What it is told: go (now or after a reserved wait), or refused with a retry delay.
        public var reservation: TokenBucket.Reservation
    }

    /// The pump's next step after `turn`.
    public struct Turn: Sendable, Hashable {
        /// Calls answered now (refused: they cannot be served within their `maxWait`).
        public var answers: [Answer]
        /// Ask the bucket for a token willing to wait this long; nil: nobody waits, the pump stops.
        public var ask: Duration?
    }

    /// The pump's next step after `answered`.
    public struct Outcome: Sendable, Hashable {
        /// Calls answered now.
        public var answers: [Answer]
        /// Sleep until then before the next `turn` (nil: turn at once).
        public var wakeAt: MonotonicInstant?
    }

    /// The calls waiting, by caller.
    public private(set) var queue: FairShareQueue<Ticket>
    private var promised: FairShareQueue<Ticket>.Waiter?

    /// An empty gate; each caller may have `maxWaitingPerCaller` calls waiting.
    public init(maxWaitingPerCaller: Int = 1024) {
        queue = FairShareQueue(maxWaitingPerCaller: maxWaitingPerCaller)
    }

    /// A call of `caller` (weight ≥ 1) starts waiting at `now` until `deadline`. Nil: it waits (start the pump
    /// if none runs); else the refusal to answer at once.
    public mutating func arrive(
        _ ticket: Ticket, caller: String, weight: Int, now: MonotonicInstant, deadline: MonotonicInstant
    ) -> TokenBucket.Reservation? {
        if queue.enqueue(ticket, caller: caller, weight: weight, now: now, deadline: deadline) { return nil }
        return Self.refusal(maxWait: deadline - now)
    }

    /// The pump's turn at `now`.
    public mutating func turn(now: MonotonicInstant) -> Turn {
        let answers = queue.removeExpired(now: now).map {
            Answer(ticket: $0.ticket, reservation: Self.refusal(maxWait: $0.deadline - $0.enqueued))
        }
        guard let next = queue.next() else { return Turn(answers: answers, ask: nil) }
        promised = next
        return Turn(answers: answers, ask: next.deadline > now ? next.deadline - now : .zero)
    }

    /// The bucket answered the last `turn`'s question (asked at `askedAt`) with `reservation`, at `now`.
    public mutating func answered(
        _ reservation: TokenBucket.Reservation, askedAt: MonotonicInstant, now: MonotonicInstant
    ) -> Outcome {
        guard let waiter = promised else { return Outcome(answers: [], wakeAt: nil) }
        promised = nil
        // Hold the next token back until this one is due, so later arrivals are ordered fairly too.
        var wakeAt: MonotonicInstant?
        if case .goAfter(let wait) = reservation { wakeAt = now + wait }
        return Outcome(answers: [Answer(ticket: waiter.ticket, reservation: reservation)], wakeAt: wakeAt)
    }

    /// A call not served within `maxWait`: retry after at least that long (and never sooner than 100 ms).
    private static func refusal(maxWait: Duration) -> TokenBucket.Reservation {
        .refused(retryAfter: max(maxWait, .milliseconds(100)))
    }
}
