import AppStoreDomain
import GatewayFoundation
import Metrics

/// Gives each listed caller at least its weight's share of an app's bucket when callers compete, in front of
/// any `RateBudget` (this replica's buckets or the budget shared in Redis).
///
/// While nobody waits for a bucket a call takes a token at once if one is free. Otherwise calls wait here, per
/// caller, and one pump per bucket takes the bucket's tokens one at a time as they come, each handed at that
/// moment to the waiting caller with the lowest virtual time (`FairShareGate`, `FairShareQueue`): no token is
/// reserved ahead for any call, so a flood of queued calls holds no backlog of future tokens, and a caller
/// below its share gets the next token after it arrives. A call that cannot be served within its `maxWait` is
/// refused (RESOURCE_EXHAUSTED with RetryInfo), as without callers, as soon as the bucket's next token is known
/// to come after it. Calls with no listed caller (open mode) go straight to the inner budget, as before.
package final class FairShareBudget: RateBudget {
    private typealias Continuation = CheckedContinuation<TokenBucket.Reservation, Never>

    private struct Bucket {
        var gate = FairShareGate<UInt64>()
        var waiting: [UInt64: Continuation] = [:]
        /// A pump runs: calls wait for this bucket.
        var pumping = false
    }

    private struct State {
        var nextTicket: UInt64 = 0
        var buckets: [RateLimitKey: Bucket] = [:]
    }

    private let inner: any RateBudget
    private let clock: any GatewayClock
    private let sleep: @Sendable (Duration) async throws -> Void
    private let metrics: FairShareMetrics
    private let appNames: [String: String]
    private let state = Lock(State())

    /// Fair shares in front of `inner`, counted in `metrics`; `appNames` maps bundle ids to app names for metric
    /// labels.
    package init(
        inner: any RateBudget, clock: any GatewayClock, appNames: [String: String] = [:],
        metrics: FairShareMetrics = FairShareMetrics(registry: MetricsRegistry()),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.inner = inner
        self.clock = clock
        self.sleep = sleep
        self.metrics = metrics
        self.appNames = appNames
    }

    package func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation {
        guard let caller = CallerIdentity.current, caller.listed else {
            return await inner.reserve(key: key, now: now, maxWait: maxWait)
        }
        // Nobody waits for this bucket (no pump runs): a token that is free now goes to whoever asks, and counts
        // for its share.
        if state.withLock({ $0.buckets[key]?.pumping != true }) {
            let immediate = await inner.reserve(key: key, now: now, maxWait: .zero)
            if case .goNow = immediate {
                state.withLock {
                    $0.buckets[key, default: Bucket()].gate.tookAtOnce(caller: caller.identity, weight: caller.weight)
                }
                return .goNow
            }
        }
        let app = appNames[key.bundleID] ?? key.bundleID
        var start = now
        let answer: TokenBucket.Reservation = await withCheckedContinuation { continuation in
            let arrival = state.withLock {
                state -> (refusal: TokenBucket.Reservation?, startPump: Bool, start: MonotonicInstant) in
                // Read under the lock: a token the pump handed out before this call queued was taken before
                // `start`, so the bucket's next one comes within one token interval of `start`.
                let start = clock.monotonicNow()
                let ticket = state.nextTicket
                state.nextTicket &+= 1
                if let refusal = state.buckets[key, default: Bucket()].gate.arrive(
                    ticket, caller: caller.identity, weight: caller.weight, now: start,
                    deadline: start + max(.zero, maxWait))
                {
                    return (refusal, false, start)
                }
                state.buckets[key]!.waiting[ticket] = continuation
                let idle = !state.buckets[key]!.pumping
                state.buckets[key]!.pumping = true
                return (nil, idle, start)
            }
            start = arrival.start
            if let refusal = arrival.refusal {
                continuation.resume(returning: refusal)
            } else if arrival.startPump {
                Task { await self.pump(key) }
            }
        }
        switch answer {
        case .refused:
            metrics.refused(caller: caller.identity, app: app)
        case .goNow, .goAfter:
            let waited = clock.monotonicNow() - start
            metrics.waited(
                caller: caller.identity, app: app,
                seconds: Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18)
        }
        return answer
    }

    /// Calls waiting here for `key`'s next token.
    package func waiting(_ key: RateLimitKey) -> Int {
        state.withLock { $0.buckets[key]?.gate.queue.count ?? 0 }
    }

    package func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {
        await inner.block(key: key, for: delay, now: now)
    }

    /// Serves `key`'s waiters, in the order `FairShareGate` decides, until none is left. The bucket's state is
    /// changed in place in the dictionary (never copied out and back, which would copy its queues).
    private func pump(_ key: RateLimitKey) async {
        while true {
            let now = clock.monotonicNow()
            let (answers, ask) = state.withLock { state -> ([(Continuation, TokenBucket.Reservation)], Duration?) in
                guard state.buckets[key] != nil else { return ([], nil) }
                let turn = state.buckets[key]!.gate.turn(now: now)
                let answers = Self.take(turn.answers, from: &state.buckets[key]!)
                // The pump ends when nobody waits; the next waiter starts a new one. The bucket's state stays (one
                // per configured app, endpoint and environment): who was served lately counts at the next contention.
                if turn.ask == nil { state.buckets[key]!.pumping = false }
                return (answers, turn.ask)
            }
            for (continuation, reservation) in answers { continuation.resume(returning: reservation) }
            guard let ask else { return }
            let reservation = await inner.reserve(key: key, now: now, maxWait: ask)
            let answeredAt = clock.monotonicNow()
            let (served, wakeAt) = state.withLock {
                state -> ([(Continuation, TokenBucket.Reservation)], MonotonicInstant?) in
                guard state.buckets[key] != nil else { return ([], nil) }
                let outcome = state.buckets[key]!.gate.answered(reservation, askedAt: now, now: answeredAt)
                return (Self.take(outcome.answers, from: &state.buckets[key]!), outcome.wakeAt)
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
