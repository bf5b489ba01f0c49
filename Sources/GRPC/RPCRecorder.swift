import GatewayFoundation
import Metrics

/// Records the calls of one method on one event loop: go-grpc-prometheus counts into that loop's own cells of
/// the method's series (`RPCMetrics`), a line in the access log, a SERVER span. Made once per method and loop
/// when the server starts (`RPCMetrics.recorder`) and used on that loop's thread only. A class: every call holds
/// its method's recorder as one reference, not a value copied per call.
package final class RPCRecorder: Sendable {
    let series: LoopSeries
    /// Nil for health checks, and without an access log.
    let accessLog: (any AccessLogWriter)?
    /// Nil without tracing.
    let spans: ServerSpans?

    init(series: LoopSeries, accessLog: (any AccessLogWriter)?, spans: ServerSpans?) {
        self.series = series
        self.accessLog = accessLog
        self.spans = spans
    }

    /// A call began.
    package func started() {
        series.inFlight.increment()
        series.started.increment()
    }

    /// A response message was handed to the transport.
    package func messageSent() { series.messagesSent.increment() }

    /// Whether the calls it records get an access-log line: all but health checks, which arrive all the time
    /// (every load balancer and kubelet). A call without one is sent no generated `x-request-id` either: a
    /// generated id exists to find the call's line, and there is none to find. The one place this is decided.
    package var logsCalls: Bool { !series.isHealthCheck }

    /// The call of `path` ended with `status` after `seconds`; `annotations` holds what its handler noted, read
    /// only when the call is logged or traced (so a call nobody logs never makes them).
    package func finished(
        path: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: @autoclosure () -> CallAnnotations
    ) {
        series.inFlight.decrement()
        if status == .ok { series.handledOK.increment() } else { series.shared.handled(status).increment() }
        series.seconds.observe(seconds)
        guard accessLog != nil || spans != nil else { return }
        let made = annotations()
        accessLog?.write(path: path, status: status, seconds: seconds, metadata: metadata, annotations: made)
        spans?.record(path: path, status: status, seconds: seconds, annotations: made)
    }
}
