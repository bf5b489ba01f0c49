import AppStoreDomain
import Metrics

/// Caller checks and per-caller fair shares as Prometheus metrics, in the gateway's registry. The `caller`
/// label only ever holds identities listed in `callers` (the checks admit no other into the budget), so
/// its values are bounded by the configuration; `reason` is a fixed set.
public final class PrometheusAccessEvents: AccessEvents {
    private let refusals: CounterFamily
    private let admitted: CounterFamily
    private let waits: CounterFamily
    private let waitSeconds: CounterFamily
    private let shareRefusals: CounterFamily

    /// Registers the metrics in `registry`; every refusal reason starts at 0 so dashboards see the series.
    public init(registry: MetricsRegistry, listedCallers: [String] = []) {
        refusals = registry.counter(
            "appstore_gateway_access_refusals_total",
            help: "Calls refused before any handler ran: UNAUTHENTICATED causes and PERMISSION_DENIED reasons.",
            labelNames: ["reason"])
        admitted = registry.counter(
            "appstore_gateway_caller_calls_total", help: "Calls admitted, by listed caller.", labelNames: ["caller"])
        waits = registry.counter(
            "appstore_gateway_fair_share_waits_total",
            help: "Apple calls of a listed caller that waited for its share of an app's bucket.",
            labelNames: ["caller", "app"])
        waitSeconds = registry.counter(
            "appstore_gateway_fair_share_wait_seconds_total",
            help: "Seconds listed callers' Apple calls waited for their share of an app's bucket.",
            labelNames: ["caller", "app"])
        shareRefusals = registry.counter(
            "appstore_gateway_fair_share_refusals_total",
            help: "Apple calls of a listed caller refused (RESOURCE_EXHAUSTED) because its share would take too long.",
            labelNames: ["caller", "app"])
        for failure in AuthenticationFailure.allCases { _ = refusals.labels(failure.rawValue) }
        for reason in ["unknown_caller", "app_not_allowed"] { _ = refusals.labels(reason) }
        for caller in listedCallers { _ = admitted.labels(caller) }
    }

    public func callRefused(reason: String) {
        refusals.labels(reason).increment()
    }

    public func callerAdmitted(caller: String) {
        admitted.labels(caller).increment()
    }

    public func fairShareWaited(caller: String, app: String, seconds: Double) {
        guard seconds > 0 else { return }
        waits.labels(caller, app).increment()
        waitSeconds.labels(caller, app).increment(by: seconds)
    }

    public func fairShareRefused(caller: String, app: String) {
        shareRefusals.labels(caller, app).increment()
    }
}
