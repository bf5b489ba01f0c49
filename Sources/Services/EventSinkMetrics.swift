import Metrics

/// The outbound sinks' series, one set per kind of sink, labelled `sink` (the URL without user information, query
/// or fragment): `appstore_gateway_webhook_out_*` for the team webhooks, `appstore_gateway_relay_out_*` for the
/// relay of Apple's notifications. A registry-less instance counts nothing.
package final class EventSinkMetrics: Sendable {
    let delivered: CounterFamily?
    let retried: CounterFamily?
    let deadLetters: GaugeFamily?
    let lag: GaugeFamily?

    /// The team webhooks' series.
    package static func teamWebhooks(registry: MetricsRegistry?) -> EventSinkMetrics {
        EventSinkMetrics(registry: registry, prefix: "appstore_gateway_webhook_out", what: "subscription events")
    }

    /// The relay's series.
    package static func relay(registry: MetricsRegistry?) -> EventSinkMetrics {
        EventSinkMetrics(registry: registry, prefix: "appstore_gateway_relay_out", what: "relayed notifications")
    }

    private init(registry: MetricsRegistry?, prefix: String, what: String) {
        guard let registry else {
            delivered = nil; retried = nil; deadLetters = nil; lag = nil
            return
        }
        delivered = registry.counter(
            "\(prefix)_delivered_total", help: "Deliveries of \(what) the endpoint acknowledged (2xx), by sink.",
            labelNames: ["sink"])
        retried = registry.counter(
            "\(prefix)_retried_total",
            help: "Attempts of \(what) that failed (not 2xx, timed out, refused, reset) and are tried again, by sink.",
            labelNames: ["sink"])
        deadLetters = registry.gauge(
            "\(prefix)_dead_letters",
            help: "Dead letters of the sink: \(what) given up after maxAge of failed attempts, waiting for "
                + "`appstore-gateway events replay`.",
            labelNames: ["sink"])
        lag = registry.gauge(
            "\(prefix)_lag_seconds",
            help: "Age of the oldest of the sink's \(what) read and not yet acknowledged or dead-lettered (0 when "
                + "none is waiting).",
            labelNames: ["sink"])
    }

    /// One sink's series.
    struct Series: Sendable {
        let delivered: Counter?
        let retried: Counter?
        let deadLetters: Gauge?
        let lag: Gauge?
    }

    func series(sink: String) -> Series {
        Series(
            delivered: delivered?.labels(sink), retried: retried?.labels(sink), deadLetters: deadLetters?.labels(sink),
            lag: lag?.labels(sink))
    }
}
