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
    private struct Waiting {
        var continuation: CheckedContinuation<TokenBucket.Reservation, Never>
        var maxWait: Duration
    }

    private struct Bucket {
        var queue = FairShareQueue<UInt64>()
        var waiting: [UInt64: Waiting] = [:]
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
            let startPump = state.withLock { state -> Bool? in
                let ticket = state.nextTicket
                state.nextTicket &+= 1
                var bucket = state.buckets[key] ?? Bucket()
                guard
                    bucket.queue.enqueue(
                        ticket, caller: caller.identity, weight: caller.weight, now: start,
                        deadline: start + max(.zero, maxWait))
                else { return nil }
                bucket.waiting[ticket] = Waiting(continuation: continuation, maxWait: maxWait)
                let idle = !bucket.pumping
                bucket.pumping = true
                state.buckets[key] = bucket
                return idle
            }
            switch startPump {
            case nil:
                continuation.resume(returning: Self.refusal(maxWait))
            case true?:
                Task { await self.pump(key) }
            case false?:
                break
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

    /// Calls waiting here for `key`'s next token (not counting the one the pump is reserving for).
    public func waiting(_ key: RateLimitKey) -> Int {
        state.withLock { $0.buckets[key]?.queue.count ?? 0 }
    }

    public func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {
        await inner.block(key: key, for: delay, now: now)
    }

    /// A call not served within `maxWait`: retry after at least that long (and never sooner than 100 ms).
    private static func refusal(_ maxWait: Duration) -> TokenBucket.Reservation {
        .refused(retryAfter: max(maxWait, .milliseconds(100)))
    }

    /// Serves `key`'s waiters one token at a time until none is left.
    private func pump(_ key: RateLimitKey) async {
        while true {
            let now = clock.monotonicNow()
            let (expired, chosen) = state.withLock { state -> ([Waiting], (Waiting, Duration)?) in
                guard var bucket = state.buckets[key] else { return ([], nil) }
                let expired = bucket.queue.removeExpired(now: now).compactMap {
                    bucket.waiting.removeValue(forKey: $0.ticket)
                }
                var chosen: (Waiting, Duration)?
                if let next = bucket.queue.next(), let waiting = bucket.waiting.removeValue(forKey: next.ticket) {
                    chosen = (waiting, next.deadline > now ? next.deadline - now : .zero)
                }
                if chosen == nil && bucket.queue.isEmpty {
                    state.buckets[key] = nil  // the pump ends; the next waiter starts a new one
                } else {
                    state.buckets[key] = bucket
                }
                return (expired, chosen)
            }
            for waiting in expired {
                waiting.continuation.resume(returning: Self.refusal(waiting.maxWait))
            }
            guard let (waiting, remaining) = chosen else {
                if state.withLock({ $0.buckets[key] == nil }) { return }
                continue
            }
            let reservation = await inner.reserve(key: key, now: clock.monotonicNow(), maxWait: remaining)
            waiting.continuation.resume(returning: reservation)
            // Hold the next token back until this one is due, so later arrivals are ordered fairly too.
            if case .goAfter(let wait) = reservation { try? await sleep(wait) }
        }
    }
}
