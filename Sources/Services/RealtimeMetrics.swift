import Metrics

/// The realtime URL's Prometheus series (a registry-less instance counts nothing).
package final class RealtimeMetrics: Sendable {
    package let requests: CounterFamily?
    package let rejected: CounterFamily?
    package let latency: HistogramFamily?
    /// `ServeRealtimeRequests` streams open on this replica.
    package let streams: Gauge?

    /// Series registered in `registry` (nil: none).
    package init(registry: MetricsRegistry?) {
        guard let registry else {
            requests = nil; rejected = nil; latency = nil; streams = nil
            return
        }
        requests = registry.counter(
            "appstore_gateway_realtime_requests_total",
            help: "Apple's verified realtime requests, by app and outcome (answered: a stream's answer in time; "
                + "late: none in notifications.realtime.timeout; defaulted: no stream with room, or it ended; "
                + "invalid: the answer broke the contract; all but answered get the app's default; repeated: a "
                + "request answered before, or still being answered, within notifications.realtime.maxRequestAge, "
                + "given the same bytes or no choice).",
            labelNames: ["app", "outcome"])
        rejected = registry.counter(
            "appstore_gateway_realtime_rejected_total",
            help: "Requests to the realtime path refused, by reason (not_a_request, verification, unknown_app, "
                + "busy, method, signing, stale: signed longer ago than notifications.realtime.maxRequestAge, "
                + "future: signed ahead of the gateway's clock).",
            labelNames: ["reason"])
        latency = registry.histogram(
            "appstore_gateway_realtime_duration_seconds",
            help: "From a realtime request's arrival to the gateway's answer, by app and outcome.",
            labelNames: ["app", "outcome"],
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5])
        streams = registry.gauge(
            "appstore_gateway_realtime_streams", help: "ServeRealtimeRequests streams open on this replica."
        ).labels()
    }

    package func reject(_ reason: String) { rejected?.labels(reason).increment() }

    package func record(app: String, outcome: String, seconds: Double) {
        requests?.labels(app, outcome).increment()
        latency?.labels(app, outcome).observe(seconds)
    }
}
