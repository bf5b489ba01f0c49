import Foundation
import GatewayFoundation
import Logging
import Metrics

/// Exports ended spans off the event loops: `record` puts a span in a bounded `SpanQueue` under a short lock
/// and returns (a full queue drops it, counted), and one thread of its own takes batches from the queue,
/// encodes them (`OTLPTraceRequest`) and sends them, one at a time, each within `timeout`. `shutdown` flushes
/// what is queued within a bounded time.
package final class SpanExporter: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: SpanQueue
    private var stopping = false
    private var flushDeadline: MonotonicInstant?
    private var exited = false

    // The thread's own.
    private let request: OTLPTraceRequest
    private let makeSender: () -> any SpanBatchSender
    private let timeout: Duration
    private let metrics: TracingMetrics
    private let logger: Logger
    private var failing = false

    /// An exporter of batches from `queue`, encoded as `request`, sent by the sender `makeSender` makes (on
    /// the exporter's thread, which starts at once), each send taking at most `timeout`.
    package init(
        queue: SpanQueue, request: OTLPTraceRequest, timeout: Duration, metrics: TracingMetrics,
        logger: Logger = Logger(label: "appstore-gateway.tracing"),
        makeSender: @escaping @Sendable () -> any SpanBatchSender
    ) {
        self.queue = queue
        self.request = request
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
        self.makeSender = makeSender
        Thread.start(named: "otlp-export") { [self] in run() }
    }

    /// Queues an ended span; never waits for the exporter (a full queue drops the span, counted).
    package func record(_ span: SpanRecord) {
        condition.lock()
        let accepted = !stopping && queue.offer(span, now: .now())
        // The thread sleeps without a deadline while the queue is empty, then until the oldest span's delay:
        // it is woken when the first span arrives (to set that deadline) and when a batch fills.
        if accepted && (queue.count == 1 || queue.count == queue.batchSize) { condition.signal() }
        condition.unlock()
        if !accepted { metrics.droppedQueueFull?.increment() }
    }

    /// Stops taking spans and exports those queued, waiting at most `timeout`; what is left then is dropped
    /// (counted). Returns whether everything queued was sent in time.
    @discardableResult
    package func shutdown(timeout: Duration) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        flushDeadline = deadline
        condition.broadcast()
        while !exited {
            let left = deadline - .now()
            guard left > .zero, condition.wait(until: Date(timeIntervalSinceNow: left.seconds)) || exited else {
                break
            }
        }
        if !exited {
            let left = queue.discardAll()
            if left > 0 { metrics.droppedShutdown?.increment(by: Double(left)) }
        }
        return exited
    }

    // MARK: The exporter thread

    private func run() {
        let sender = makeSender()
        while let (batch, deadline) = nextBatch() {
            var budget = timeout
            if let deadline { budget = min(budget, deadline - .now()) }
            guard budget > .zero else {
                metrics.droppedShutdown?.increment(by: Double(batch.count))
                continue
            }
            export(batch, with: sender, within: budget)
        }
        condition.lock()
        exited = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for a batch that is due (or, when stopping, any batch); nil once stopping with nothing left.
    private func nextBatch() -> ([SpanRecord], MonotonicInstant?)? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let now = MonotonicInstant.now()
            let batch = queue.takeBatch(now: now, flushing: stopping)
            if !batch.isEmpty { return (batch, flushDeadline) }
            if stopping { return nil }
            if let due = queue.dueAt {
                _ = condition.wait(until: Date(timeIntervalSinceNow: max(0, (due - now).seconds)))
            } else {
                condition.wait()
            }
        }
    }

    private func export(_ batch: [SpanRecord], with sender: any SpanBatchSender, within budget: Duration) {
        let outcome = sender.send(request.encode(batch), timeout: budget)
        if outcome == .accepted {
            metrics.exported?.increment(by: Double(batch.count))
            if failing {
                failing = false
                logger.notice("trace export recovered")
            }
            return
        }
        metrics.droppedExportFailed?.increment(by: Double(batch.count))
        // Logged once per outage, not per batch: the metric counts every lost span.
        guard !failing else { return }
        failing = true
        let problem =
            switch outcome {
            case .refused(let status): "the collector answered HTTP \(status)"
            case .failed(let reason): reason
            case .accepted: ""
            }
        logger.warning(
            "trace export failing; spans are dropped until the collector answers",
            metadata: ["problem": "\(problem)", "spans": .stringConvertible(batch.count)])
    }
}

extension Duration {
    /// This duration in seconds, for `Date` arithmetic.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
