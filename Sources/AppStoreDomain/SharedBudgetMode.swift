import GatewayFoundation

/// Where one replica takes its rate-limit tokens while Redis comes and goes: the pure decision part of
/// the shared budget (no sockets, no clock of its own; the owner of the Redis connection feeds it).
///
/// `shared`: every token comes from Redis. A failed or timed-out command moves to `fallback`: tokens come
/// from a local bucket at `redis.fallbackShare` of the budget, and a probe (reconnect + script load) is
/// due after a back-off that doubles from `initialBackoff` to `maxBackoff`. When a probe is due the mode
/// is `probing` until it answers: success returns to `shared`, failure to `fallback` with a longer back-off.
/// Each change of mode is returned once as a `Transition`, so it is logged and counted once.
package struct SharedBudgetMode: Sendable, Hashable {
    /// The three states.
    package enum State: String, Sendable, Hashable {
        /// Tokens come from the shared Redis bucket.
        case shared
        /// Redis failed; tokens come from the local fallback bucket until the next probe.
        case fallback
        /// A probe of Redis is under way; tokens still come from the local bucket.
        case probing
    }

    /// A change worth one log line and one count.
    package enum Transition: Sendable, Hashable {
        /// Redis failed while shared: now on the local fallback share.
        case fellBack
        /// Redis answered a probe: back on the shared budget.
        case restored
    }

    /// Where the next batch of reservations goes.
    package enum Route: Sendable, Hashable {
        /// Ask Redis.
        case redis
        /// Use the local fallback bucket.
        case local
    }

    /// The current state.
    package private(set) var state: State = .shared
    /// When the next probe is due (in `fallback`).
    package private(set) var nextProbe: MonotonicInstant?
    /// The back-off before the next probe after a failed one.
    package private(set) var backoff: Duration
    /// First back-off after a failure.
    package let initialBackoff: Duration
    /// Longest back-off between probes.
    package let maxBackoff: Duration

    /// Starts `shared`: the first use connects.
    package init(initialBackoff: Duration = .milliseconds(250), maxBackoff: Duration = .seconds(2)) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = max(initialBackoff, maxBackoff)
        backoff = initialBackoff
    }

    /// Where reservations go now.
    package var route: Route { state == .shared ? .redis : .local }

    /// Whether a probe should start at `now` (then call `probeStarted`).
    package func probeDue(now: MonotonicInstant) -> Bool {
        guard state == .fallback, let nextProbe else { return false }
        return now >= nextProbe
    }

    /// A probe is being sent.
    package mutating func probeStarted() {
        if state == .fallback { state = .probing }
    }

    /// Redis answered (a command or a probe).
    package mutating func redisAnswered() -> Transition? {
        let wasShared = state == .shared
        state = .shared
        nextProbe = nil
        backoff = initialBackoff
        return wasShared ? nil : .restored
    }

    /// A Redis command or probe failed (connect error, timeout, protocol error) at `now`.
    package mutating func redisFailed(now: MonotonicInstant) -> Transition? {
        switch state {
        case .shared:
            state = .fallback
            backoff = initialBackoff
            nextProbe = now + backoff
            return .fellBack
        case .probing, .fallback:
            backoff = min(backoff * 2, maxBackoff)
            state = .fallback
            nextProbe = now + backoff
            return nil
        }
    }
}
