import Foundation
import GatewayFoundation
import Metrics
import Observability
import Testing
import Tracing

/// The exporter thread: what is queued reaches the sender on shutdown, failures and drops are counted.
@Suite struct SpanExporterTests {
    /// Records what it is sent and answers `outcome`.
    final class RecordingSender: SpanBatchSender, @unchecked Sendable {
        let outcome: SpanBatchSendOutcome
        let sent = Lock<[[UInt8]]>([])
        let arrived = DispatchSemaphore(value: 0)
        init(outcome: SpanBatchSendOutcome) { self.outcome = outcome }
        func send(_ body: [UInt8], timeout: Duration) -> SpanBatchSendOutcome {
            sent.withLock { $0.append(body) }
            arrived.signal()
            return outcome
        }
    }

    func span(_ id: UInt64) -> SpanRecord {
        SpanRecord(
            traceIDHigh: 1, traceIDLow: 1, spanID: id, parentSpanID: 0, parentIsRemote: false, traceFlags: 1,
            name: "s", kind: .internal, startUnixNanos: 1)
    }

    func exporter(_ sender: RecordingSender, registry: MetricsRegistry, capacity: Int = 100) -> SpanExporter {
        SpanExporter(
            // A delay no test waits for: only full batches and the shutdown flush send.
            queue: SpanQueue(capacity: capacity, batchSize: 4, delay: .seconds(3600)),
            request: OTLPTraceRequest(resource: [], scopeName: "test", scopeVersion: "0"), timeout: .seconds(5),
            metrics: TracingMetrics(registry: registry), makeSender: { sender })
    }

    func value(_ registry: MetricsRegistry, _ series: String) -> String? {
        registry.render().split(separator: "\n").first { $0.hasPrefix(series + " ") }.map {
            String($0.dropFirst(series.count + 1))
        }
    }

    @Test func shutdownFlushesEverythingQueued() {
        let sender = RecordingSender(outcome: .accepted)
        let registry = MetricsRegistry()
        let exporter = exporter(sender, registry: registry)
        for id in 1...10 { exporter.record(span(UInt64(id))) }
        #expect(exporter.shutdown(timeout: .seconds(30)))
        let bodies = sender.sent.withLock { $0 }
        #expect(bodies.count == 3)  // 4 + 4 + 2
        #expect(value(registry, "appstore_gateway_trace_spans_exported_total") == "10")
        #expect(value(registry, "appstore_gateway_trace_spans_dropped_total{reason=\"queue_full\"}") == "0")
    }

    @Test func aLoneSpanIsSentOnceItsDelayPassesWithoutAShutdown() {
        let sender = RecordingSender(outcome: .accepted)
        let exporter = SpanExporter(
            queue: SpanQueue(capacity: 100, batchSize: 50, delay: .milliseconds(1)),
            request: OTLPTraceRequest(resource: [], scopeName: "test", scopeVersion: "0"), timeout: .seconds(5),
            metrics: TracingMetrics(registry: nil), makeSender: { sender })
        // The exporter sleeps without a deadline while the queue is empty: the first span must wake it.
        exporter.record(span(1))
        #expect(sender.arrived.wait(timeout: .now() + 60) == .success)
        exporter.shutdown(timeout: .seconds(30))
    }

    @Test func aRefusedExportIsCountedAsDropped() {
        let sender = RecordingSender(outcome: .refused(httpStatus: 503))
        let registry = MetricsRegistry()
        let exporter = exporter(sender, registry: registry)
        for id in 1...3 { exporter.record(span(UInt64(id))) }
        exporter.shutdown(timeout: .seconds(30))
        #expect(value(registry, "appstore_gateway_trace_spans_dropped_total{reason=\"export_failed\"}") == "3")
        #expect(value(registry, "appstore_gateway_trace_spans_exported_total") == "0")
    }

    @Test func afterShutdownSpansAreDroppedNotQueued() {
        let sender = RecordingSender(outcome: .accepted)
        let registry = MetricsRegistry()
        let exporter = exporter(sender, registry: registry, capacity: 4)
        exporter.shutdown(timeout: .seconds(30))
        // Stopped: nothing is taken any more, and recording never waits.
        for id in 1...6 { exporter.record(span(UInt64(id))) }
        #expect(value(registry, "appstore_gateway_trace_spans_dropped_total{reason=\"queue_full\"}") == "6")
    }
}
