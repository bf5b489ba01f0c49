import Metrics

/// The per-caller fair shares' series (`FairShareBudget`): the Apple calls of listed callers that waited for
/// their share of an app's bucket, how long, and those refused. The `caller` label only ever holds identities
/// listed in `callers` (no other caller enters a share), so its values are bounded by the configuration.
package final class FairShareMetrics: Sendable {
    package let waits: CounterFamily
    package let waitSeconds: CounterFamily
    package let refusals: CounterFamily

    /// The families, registered in `registry`.
    package init(registry: MetricsRegistry) {
        waits = registry.counter(
            "appstore_gateway_fair_share_waits_total",
            help: "Apple calls of a listed caller that waited for its share of an app's bucket.",
            labelNames: ["caller", "app"])
        waitSeconds = registry.counter(
            "appstore_gateway_fair_share_wait_seconds_total",
            help: "Seconds listed callers' Apple calls waited for their share of an app's bucket.",
            labelNames: ["caller", "app"])
        refusals = registry.counter(
            "appstore_gateway_fair_share_refusals_total",
            help: "Apple calls of a listed caller refused (RESOURCE_EXHAUSTED) because its share would take too long.",
            labelNames: ["caller", "app"])
    }

    /// A listed caller's Apple call waited `seconds` for its fair share of `app`'s bucket (no wait: nothing).
    func waited(caller: String, app: String, seconds: Double) {
        guard seconds > 0 else { return }
        waits.labels(caller, app).increment()
        waitSeconds.labels(caller, app).increment(by: seconds)
    }

    /// A listed caller's Apple call was refused because its share of `app`'s bucket would take too long.
    func refused(caller: String, app: String) {
        refusals.labels(caller, app).increment()
    }
}
