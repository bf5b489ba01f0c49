import GatewayFoundation

/// The decisions of one bucket's fair-share pump (the I/O wrapper is the Apple client's fair-share budget):
/// who waits, what the pump asks the bucket next, and who gets each answer. Pure state, time passed in.
///
/// The pump runs `turn` → (the bucket's reservation with the returned `maxWait`) → `answered` → (a sleep
/// until the returned instant, if any) → `turn` …, until `turn` says nobody waits.
///
/// No token is promised to a call, neither when it starts waiting nor ahead of time: the pump asks the bucket
/// for a token that is free now (`maxWait` zero), and a token the bucket gives goes at that moment to the waiting
/// caller with the lowest virtual time (`FairShareQueue.next`), whenever it arrived. When the bucket has none it
/// says when the next one comes: the calls whose deadline is before that instant are refused at once (no token
/// can reach them in time, and an early answer lets their caller retry), and so is a call that arrives meanwhile
/// with such a deadline; the pump sleeps until then. A call that was waiting when a token came is served even if
/// the pump wakes after its deadline. So a caller below its share waits for no more than the next token after it
/// arrives: with `maxWait` one token interval it is always served, whatever the others send.
package struct FairShareGate<Ticket: Hashable & Sendable>: Sendable {
    /// One answer for one waiting call.
    package struct Answer: Sendable, Hashable {
        /// The call.
        package var ticket: Ticket
        /// What it is told: the bucket's token (go), or refused with a retry delay.
        package var reservation: TokenBucket.Reservation
    }

    /// The pump's next step after `turn`.
    package struct Turn: Sendable, Hashable {
        /// Calls answered now (refused: they cannot be served within their `maxWait`).
        package var answers: [Answer]
        /// Ask the bucket for a token with this `maxWait` (zero: one that is free now); nil: nobody waits, the
        /// pump stops.
        package var ask: Duration?
    }

    /// The pump's next step after `answered`.
    package struct Outcome: Sendable, Hashable {
        /// Calls answered now.
        package var answers: [Answer]
        /// Sleep until then before the next `turn` (nil: turn at once).
        package var wakeAt: MonotonicInstant?
    }

    /// The calls waiting, by caller.
    package private(set) var queue: FairShareQueue<Ticket>
    /// The earliest the bucket's next token can come, from its last refusal; nil after it gave one (the next
    /// may be free at once).
    private var nextToken: MonotonicInstant?

    /// An empty gate; each caller may have `maxWaitingPerCaller` calls waiting.
    package init(maxWaitingPerCaller: Int = 1024) {
        queue = FairShareQueue(maxWaitingPerCaller: maxWaitingPerCaller)
    }

    /// A call of `caller` (weight ≥ 1) starts waiting at `now` until `deadline`. Nil: it waits (start the pump
    /// if none runs); else the refusal to answer at once (its deadline is before the bucket's next token, or the
    /// caller has too many calls waiting).
    package mutating func arrive(
        _ ticket: Ticket, caller: String, weight: Int, now: MonotonicInstant, deadline: MonotonicInstant
    ) -> TokenBucket.Reservation? {
        let maxWait = deadline > now ? deadline - now : .zero
        if let nextToken, deadline < nextToken {
            return Self.refusal(maxWait: maxWait, untilToken: nextToken - now)
        }
        if queue.enqueue(ticket, caller: caller, weight: weight, now: now, deadline: deadline) { return nil }
        return Self.refusal(maxWait: maxWait)
    }

    /// A call of `caller` took a free token from the bucket without waiting, while nobody waited (no pump ran).
    package mutating func tookAtOnce(caller: String, weight: Int) {
        queue.charge(caller, weight: weight)
        nextToken = nil
    }

    /// The pump's turn at `now`: the calls no token can reach in time leave, and the bucket is asked for a token
    /// free now.
    package mutating func turn(now: MonotonicInstant) -> Turn {
        let answers = refuse(deadlineBefore: nextToken ?? now, now: now)
        return Turn(answers: answers, ask: queue.isEmpty ? nil : .zero)
    }

    /// The bucket answered the last `turn`'s question (asked at `askedAt`) with `reservation`, at `now`.
    package mutating func answered(
        _ reservation: TokenBucket.Reservation, askedAt: MonotonicInstant, now: MonotonicInstant
    ) -> Outcome {
        guard case .refused(let retryAfter) = reservation else {
            // A token: it goes to the fairest caller waiting now.
            nextToken = nil
            guard let waiter = queue.next() else { return Outcome(answers: [], wakeAt: nil) }
            return Outcome(answers: [Answer(ticket: waiter.ticket, reservation: reservation)], wakeAt: nil)
        }
        // The bucket's next token comes no sooner than `retryAfter` after it was asked (its clock may be Redis's,
        // read somewhere between `askedAt` and `now`), and surely by `retryAfter` after `now`.
        let tokenAt = askedAt + retryAfter
        nextToken = tokenAt
        let answers = refuse(deadlineBefore: tokenAt, now: now)
        return Outcome(answers: answers, wakeAt: queue.isEmpty ? nil : now + max(retryAfter, .milliseconds(1)))
    }

    /// Refuses the waiters whose deadline is before `instant`.
    private mutating func refuse(deadlineBefore instant: MonotonicInstant, now: MonotonicInstant) -> [Answer] {
        queue.removeWaiters(deadlineBefore: instant).map {
            Answer(
                ticket: $0.ticket,
                reservation: Self.refusal(maxWait: $0.deadline - $0.enqueued, untilToken: instant - now))
        }
    }

    /// A call not served within `maxWait`: retry after at least that long, no sooner than the bucket's next token,
    /// and never sooner than 100 ms.
    private static func refusal(maxWait: Duration, untilToken: Duration = .zero) -> TokenBucket.Reservation {
        .refused(retryAfter: max(maxWait, untilToken, .milliseconds(100)))
    }
}
