import AppStoreDomain
import Metrics

/// The caller guard's series: calls refused before any handler ran, by reason, and calls admitted, by listed
/// caller. The `caller` label only ever holds identities listed in `callers` (the guard counts no other), so
/// its values are bounded by the configuration; `reason` is a fixed set.
package final class CallerAccessMetrics: Sendable {
    package let refusals: CounterFamily
    package let admitted: CounterFamily

    /// The families, registered in `registry`; every refusal reason, and each of `listedCallers`, starts at 0
    /// so dashboards see the series.
    package init(registry: MetricsRegistry, listedCallers: [String] = []) {
        refusals = registry.counter(
            "appstore_gateway_access_refusals_total",
            help: "Calls refused before any handler ran: UNAUTHENTICATED causes and PERMISSION_DENIED reasons.",
            labelNames: ["reason"])
        admitted = registry.counter(
            "appstore_gateway_caller_calls_total", help: "Calls admitted, by listed caller.", labelNames: ["caller"])
        for failure in AuthenticationFailure.allCases { _ = refusals.labels(failure.rawValue) }
        for reason in ["unknown_caller", "app_not_allowed"] { _ = refusals.labels(reason) }
        for caller in listedCallers { _ = admitted.labels(caller) }
    }

    /// A call was refused before any handler ran: `reason` is an `AuthenticationFailure` raw value or an
    /// `AccessRefusal.reason` (a fixed set).
    func callRefused(reason: String) {
        refusals.labels(reason).increment()
    }

    /// A listed caller's call was admitted.
    func callerAdmitted(_ caller: String) {
        admitted.labels(caller).increment()
    }
}
