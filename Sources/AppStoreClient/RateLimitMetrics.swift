import Metrics

/// The local token buckets' series (this replica's budget of Apple's rate limits, or its fallback share): the
/// calls that waited for a token, how long, and the calls refused.
package final class RateLimitMetrics: Sendable {
    package let waits: CounterFamily
    package let waitSeconds: CounterFamily
    package let refusals: CounterFamily

    /// The families, registered in `registry`.
    package init(registry: MetricsRegistry) {
        let bucket = ["app", "endpoint", "environment"]
        waits = registry.counter(
            "appstore_gateway_rate_limit_waits_total",
            help: "Apple calls that waited for a token of the local bucket.", labelNames: bucket)
        waitSeconds = registry.counter(
            "appstore_gateway_rate_limit_wait_seconds_total",
            help: "Seconds Apple calls spent waiting for local tokens.", labelNames: bucket)
        refusals = registry.counter(
            "appstore_gateway_rate_limit_refusals_total",
            help: "Apple calls refused by the local bucket (RESOURCE_EXHAUSTED; nothing was sent to Apple).",
            labelNames: bucket)
    }

    /// An Apple call waited `seconds` for a token of the local bucket.
    func waited(app: String, endpoint: String, environment: String, seconds: Double) {
        waits.labels(app, endpoint, environment).increment()
        waitSeconds.labels(app, endpoint, environment).increment(by: max(0, seconds))
    }

    /// An Apple call was refused by the local bucket (RESOURCE_EXHAUSTED, nothing sent to Apple).
    func refused(app: String, endpoint: String, environment: String) {
        refusals.labels(app, endpoint, environment).increment()
    }
}
