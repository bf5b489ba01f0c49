import AppStoreDomain
import Metrics
import Redis

/// The shared (Redis) rate budget's series: reservations by outcome, its mode and fallbacks, and its Redis
/// round trips. Redis round trips per Apple call = `appstore_gateway_redis_round_trips_total` /
/// `appstore_gateway_apple_requests_total`.
package final class SharedBudgetMetrics: Sendable {
    package let reservations: CounterFamily
    package let fallbacks: Counter
    package let mode: GaugeFamily
    package let roundTrips: Counter
    package let redisSeconds: Histogram
    package let redisErrors: CounterFamily

    /// The families, registered in `registry` (each mode at 0 until a budget reports its own).
    package init(registry: MetricsRegistry) {
        reservations = registry.counter(
            "appstore_gateway_shared_budget_reservations_total",
            help: "Shared-budget token reservations, by app, endpoint and outcome (taken, waited, refused, fallback).",
            labelNames: ["app", "endpoint", "outcome"])
        fallbacks = registry.counter(
            "appstore_gateway_shared_budget_fallbacks_total",
            help: "Times this replica lost Redis and fell back to its local share of the budget."
        ).labels()
        mode = registry.gauge(
            "appstore_gateway_shared_budget_mode",
            help: "1 for the shared budget's current mode (shared, fallback, probing), 0 for the others.",
            labelNames: ["mode"])
        roundTrips = registry.counter(
            "appstore_gateway_redis_round_trips_total", help: "Redis round trips (pipelines) sent."
        ).labels()
        redisSeconds = registry.histogram(
            "appstore_gateway_redis_command_duration_seconds", help: "Latency of Redis round trips (pipelines).",
            buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25]
        ).labels()
        redisErrors = registry.counter(
            "appstore_gateway_redis_errors_total",
            help: "Failed Redis round trips, by kind (connect, timeout, protocol, error).",
            labelNames: ["kind"])
        for state in Self.states { mode.labels(state.rawValue).set(0) }
    }

    private static let states: [SharedBudgetMode.State] = [.shared, .fallback, .probing]

    /// One reservation for `app`/`endpoint` ended with `outcome`.
    func reservation(app: String, endpoint: String, outcome: SharedBudgetOutcome) {
        reservations.labels(app, endpoint, outcome.rawValue).increment()
    }

    /// The budget's mode is now `state`; `transition` is set when this is a change worth counting.
    func modeChanged(to state: SharedBudgetMode.State, transition: SharedBudgetMode.Transition?) {
        for candidate in Self.states { mode.labels(candidate.rawValue).set(candidate == state ? 1 : 0) }
        if transition == .fellBack { fallbacks.increment() }
    }

    /// One Redis round trip took `seconds`; `failure` names what went wrong.
    func roundTrip(seconds: Double, failure: RedisFailureKind?) {
        roundTrips.increment()
        redisSeconds.observe(seconds)
        if let failure { redisErrors.labels(failure.rawValue).increment() }
    }
}

/// How one shared-budget reservation ended.
package enum SharedBudgetOutcome: String, Sendable, Hashable {
    /// A shared token, at once.
    case taken
    /// A shared token after a wait.
    case waited
    /// Refused by the shared bucket or a shared Retry-After block.
    case refused
    /// Answered by the local fallback bucket (Redis unreachable).
    case fallback
}
