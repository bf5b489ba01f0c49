import Metrics

/// The trace exporter's Prometheus series (a registry-less instance counts nothing).
package final class TracingMetrics: Sendable {
    let exported: Counter?
    let droppedQueueFull: Counter?
    let droppedExportFailed: Counter?
    let droppedShutdown: Counter?

    /// Series registered in `registry` (nil: none). Registered whether or not tracing is on, so dashboards
    /// and alerts find them at zero.
    package init(registry: MetricsRegistry?) {
        guard let registry else {
            exported = nil; droppedQueueFull = nil; droppedExportFailed = nil; droppedShutdown = nil
            return
        }
        exported = registry.counter(
            "appstore_gateway_trace_spans_exported_total",
            help: "Spans the OTLP collector accepted (tracing.endpoint)."
        ).labels()
        let dropped = registry.counter(
            "appstore_gateway_trace_spans_dropped_total",
            help: "Spans never exported, by reason: queue_full (tracing.maxQueueSize reached: the collector is "
                + "slower than the gateway), export_failed (the collector refused the batch or could not be "
                + "reached in tracing.timeout), shutdown (left when the flush at shutdown ran out of time).",
            labelNames: ["reason"])
        droppedQueueFull = dropped.labels("queue_full")
        droppedExportFailed = dropped.labels("export_failed")
        droppedShutdown = dropped.labels("shutdown")
    }
}
