import Foundation
import GatewayFoundation
import Observability

/// The gateway's `Tracer` when `tracing` has an endpoint: samples with the configured `TraceSampler` and
/// hands ended spans to a `SpanExporter` that posts them to the collector over OTLP/HTTP.
package final class OTLPTracer: Tracer {
    /// The sampler in force.
    package let sampler: TraceSampler
    /// Where ended spans go.
    package let exporter: SpanExporter

    /// A tracer with `sampler` exporting through `exporter`.
    package init(sampler: TraceSampler, exporter: SpanExporter) {
        self.sampler = sampler
        self.exporter = exporter
    }

    /// The tracer `tracing` asks for, counting into `metrics`; nil when tracing is off (no endpoint, or
    /// `OTEL_SDK_DISABLED`), so the gateway keeps the `SilentTracer`.
    package static func make(_ tracing: OTLPTracer.Settings, metrics: TracingMetrics) -> OTLPTracer? {
        guard let url = tracing.tracesURL else { return nil }
        let userAgent = "appstore-gateway/\(BuildInfo.version)"
        let headers = tracing.headers.map { (name: $0.name, value: $0.value) }
        let exporter = SpanExporter(
            queue: SpanQueue(
                capacity: tracing.maxQueueSize, batchSize: tracing.maxExportBatchSize,
                delay: tracing.scheduleDelay),
            request: OTLPTraceRequest(
                resource: resource(tracing), scopeName: "appstore-gateway", scopeVersion: BuildInfo.version),
            timeout: tracing.timeout, metrics: metrics,
            makeSender: { OTLPHTTPSender(url: url, headers: headers, userAgent: userAgent) })
        return OTLPTracer(sampler: TraceSampler(tracing), exporter: exporter)
    }

    /// The resource's attributes: the configured ones, then `service.name` and the SDK's own keys.
    static func resource(_ tracing: OTLPTracer.Settings) -> [SpanRecord.Attribute] {
        var attributes: [SpanRecord.Attribute] = []
        for pair in tracing.resourceAttributes where pair.name != "service.name" {
            if let index = attributes.firstIndex(where: { $0.key == pair.name }) {
                attributes[index].value = .string(pair.value)
            } else {
                attributes.append(SpanRecord.Attribute(pair.name, .string(pair.value)))
            }
        }
        attributes.append(SpanRecord.Attribute("service.name", .string(tracing.effectiveServiceName)))
        if !attributes.contains(where: { $0.key == "service.version" }) {
            attributes.append(SpanRecord.Attribute("service.version", .string(BuildInfo.version)))
        }
        attributes.append(SpanRecord.Attribute("telemetry.sdk.name", .string("appstore-gateway")))
        attributes.append(SpanRecord.Attribute("telemetry.sdk.language", .string("swift")))
        attributes.append(SpanRecord.Attribute("telemetry.sdk.version", .string(BuildInfo.version)))
        return attributes
    }

    package func isSampled(_ trace: TraceContext) -> Bool { sampler.shouldSample(trace) }

    package func record(_ span: SpanRecord) { exporter.record(span) }

    package func unixNanos() -> UInt64 {
        var reading = timespec()
        clock_gettime(CLOCK_REALTIME, &reading)
        return UInt64(max(0, reading.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, reading.tv_nsec))
    }

    /// Flushes the queued spans within `timeout` (at shutdown).
    @discardableResult
    package func shutdown(timeout: Duration) -> Bool { exporter.shutdown(timeout: timeout) }
}
