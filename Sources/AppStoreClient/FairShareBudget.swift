import GatewayCore
import Synchronization

/// Gives each listed caller at least its weight's share of an app's bucket when callers compete, in front of
/// any `RateBudget` (this replica's buckets or the budget shared in Redis).
///
/// While a bucket has tokens to spare a call takes one at once. When it has none, calls wait here, per caller,
/// and one pump per bucket hands out the bucket's tokens one at a time in `FairShareQueue` order: it reserves
/// the next token only after the previous reservation's wait is over, so the bucket never holds a backlog
/// that a flooding caller queued ahead of everyone else. A call that cannot be served within its `maxWait`
/// is refused (RESOURCE_EXHAUSTED with RetryInfo), as without callers. Calls with no listed caller (open
/// mode) go straight to the inner budget, as before.
public final class FairShareBudget: RateBudget {
    private typealias Continuation = CheckedContinuation<TokenBucket.Reservation, Never>

    private struct Bucket {
        var gate = FairShareGate<UInt64>()
        var waiting: [UInt64: Continuation] = [:]
        var pumping = false
    }

    private struct State {
        var nextTicket: UInt64 = 0
        var buckets: [RateLimitKey: Bucket] = [:]
    }

    private let inner: any RateBudget
    private let clock: any GatewayClock
    private let sleep: @Sendable (Duration) async throws -> Void
    private let events: any AccessEvents
    private let appNames: [String: String]
    private let state = Mutex(State())

    /// Fair shares in front of `inner`; `appNames` maps bundle ids to app names for metric labels.
    public init(
        inner: any RateBudget, clock: any GatewayClock, appNames: [String: String] = [:],
        events: any AccessEvents = SilentAccessEvents(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.inner = inner
        self.clock = clock
        self.sleep = sleep
        self.events = events
        self.appNames = appNames
    }

    public func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation {
        guard let caller = CallerIdentity.current, caller.listed else {
            return await inner.reserve(key: key, now: now, maxWait: maxWait)
        }
        // Nobody waits for this bucket: a token that is free now goes to whoever asks.
        if state.withLock({ $0.buckets[key] == nil }) {
            let immediate = await inner.reserve(key: key, now: now, maxWait: .zero)
            if case .goNow = immediate { return .goNow }
        }
        let app = appNames[key.bundleID] ?? key.bundleID
        let start = clock.monotonicNow()
        let answer: TokenBucket.Reservation = await withCheckedContinuation { continuation in
            let arrival = state.withLock { state -> (refusal: TokenBucket.Reservation?, startPump: Bool) in
                let ticket = state.nextTicket
                state.nextTicket &+= 1
                var bucket = state.buckets[key] ?? Bucket()
                if let refusal = bucket.gate.arrive(
                    ticket, caller: caller.identity, weight: caller.weight, now: start,
                    deadline: start + max(.zero, maxWait))
                {
                    return (refusal, false)
                }
                bucket.waiting[ticket] = continuation
                let idle = !bucket.pumping
                bucket.pumping = true
                state.buckets[key] = bucket
                return (nil, idle)
            }
            if let refusal = arrival.refusal {
                continuation.resume(returning: refusal)
            } else if arrival.startPump {
                Task { await self.pump(key) }
            }
        }
        switch answer {
        case .refused:
            events.fairShareRefused(caller: caller.identity, app: app)
        case .goNow, .goAfter:
            let waited = clock.monotonicNow() - start
            events.fairShareWaited(
                caller: caller.identity, app: app,
                seconds: Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18)
        }
        return answer
    }

    /// Calls waiting here for `key`'s next token (not counting one the pump is asking the bucket for).
    public func waiting(_ key: RateLimitKey) -> Int {
        state.withLock { $0.buckets[key]?.gate.queue.count ?? 0 }
    }

    public func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {
        await inner.block(key: key, for: delay, now: now)
    }

    /// Serves `key`'s waiters, in the order `FairShareGate` decides, until none is left.
    private func pump(_ key: RateLimitKey) async {
        while true {
            let now = clock.monotonicNow()
            let (answers, ask) = state.withLock { state -> ([(Continuation, TokenBucket.Reservation)], Duration?) in
                guard var bucket = state.buckets[key] else { return ([], nil) }
                let turn = bucket.gate.turn(now: now)
                let answers = Self.take(turn.answers, from: &bucket)
                // The pump ends when nobody waits; the next waiter starts a new one.
                state.buckets[key] = turn.ask == nil ? nil : bucket
                return (answers, turn.ask)
            }
            for (continuation, reservation) in answers { continuation.resume(returning: reservation) }
            guard let ask else { return }
            let reservation = await inner.reserve(key: key, now: now, maxWait: ask)
            let answeredAt = clock.monotonicNow()
            let (served, wakeAt) = state.withLock {
                state -> ([(Continuation, TokenBucket.Reservation)], MonotonicInstant?) in
                guard var bucket = state.buckets[key] else { return ([], nil) }
                let outcome = bucket.gate.answered(reservation, askedAt: now, now: answeredAt)
                let answers = Self.take(outcome.answers, from: &bucket)
                state.buckets[key] = bucket
                return (answers, outcome.wakeAt)
            }
            for (continuation, reservation) in served { continuation.resume(returning: reservation) }
            if let wakeAt {
                let wait = wakeAt - clock.monotonicNow()
                if wait > .zero { try? await sleep(wait) }
            }
        }
    }

    /// The continuations of `answers`, removed from `bucket`.
    private static func take(
        _ answers: [FairShareGate<UInt64>.Answer], from bucket: inout Bucket
    ) -> [(Continuation, TokenBucket.Reservation)] {
        answers.compactMap { answer in
            bucket.waiting.removeValue(forKey: answer.ticket).map { ($0, answer.reservation) }
        }
    }
}
