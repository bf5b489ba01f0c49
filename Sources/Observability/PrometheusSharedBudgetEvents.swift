import AppStoreClient
import AppStoreDomain
import Metrics
import Redis

/// The shared (Redis) rate budget's events as Prometheus metrics, in the gateway's registry.
///
/// Redis round trips per Apple call = `appstore_gateway_redis_round_trips_total` /
/// `appstore_gateway_apple_requests_total`.
public final class PrometheusSharedBudgetEvents: SharedBudgetEvents {
    private let reservations: CounterFamily
    private let fallbacks: Counter
    private let mode: GaugeFamily
    private let roundTrips: Counter
    private let redisSeconds: Histogram
    private let redisErrors: CounterFamily

    /// Registers the metrics in `registry`.
    public init(registry: MetricsRegistry) {
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
        for state in [SharedBudgetMode.State.shared, .fallback, .probing] { mode.labels(state.rawValue).set(0) }
    }

    public func sharedBudgetReservation(app: String, endpoint: String, outcome: SharedBudgetOutcome) {
        reservations.labels(app, endpoint, outcome.rawValue).increment()
    }

    public func sharedBudgetMode(_ state: SharedBudgetMode.State, transition: SharedBudgetMode.Transition?) {
        for candidate in [SharedBudgetMode.State.shared, .fallback, .probing] {
            mode.labels(candidate.rawValue).set(candidate == state ? 1 : 0)
        }
        if transition == .fellBack { fallbacks.increment() }
    }

    public func redisRoundTrip(seconds: Double, commands: Int, failure: RedisFailureKind?) {
        roundTrips.increment()
        redisSeconds.observe(seconds)
        if let failure { redisErrors.labels(failure.rawValue).increment() }
    }
}
