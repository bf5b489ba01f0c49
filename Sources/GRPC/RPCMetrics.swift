import GatewayFoundation
import Metrics

/// The gRPC server's metrics, named as go-grpc-prometheus names them (`grpc_server_*` with `grpc_type`,
/// `grpc_service`, `grpc_method`, `grpc_code`), and the calls in flight: they are what existing gRPC dashboards,
/// alerts and recording rules expect, and they are native Prometheus names (OpenTelemetry's `rpc.*` names change
/// with the exporter's translation rules). Only the methods a server serves get their own labels; every other
/// path counts as `unknown`.
///
/// The server records into them directly: each method's calls on each loop count into that loop's own cells
/// (`StepCell`, `Histogram.Cell`), resolved once when the server starts, so a call takes no lock, touches no
/// memory another loop writes and allocates nothing for its metrics.
public final class RPCMetrics: Sendable {
    private let started: CounterFamily
    private let handled: CounterFamily
    private let handlingSeconds: HistogramFamily
    private let messagesSent: CounterFamily
    private let inFlight: Gauge
    /// Registered methods, each with its series resolved once.
    private let methods = Lock<[String: MethodSeries]>([:])
    /// The series of every unregistered path.
    private let unknownMethod: MethodSeries
    /// Each loop's cells of each series, made once (bounded by the served methods, plus one, times the loops).
    private let loopSeries = Lock<[LoopSeriesKey: LoopSeries]>([:])
    private struct LoopSeriesKey: Hashable {
        let series: ObjectIdentifier
        let loop: Int
    }

    /// The families, registered in `registry`.
    public init(registry: MetricsRegistry) {
        let method = ["grpc_type", "grpc_service", "grpc_method"]
        started = registry.counter("grpc_server_started_total", help: "RPCs started on the server.", labelNames: method)
        handled = registry.counter(
            "grpc_server_handled_total", help: "RPCs completed on the server, regardless of success or failure.",
            labelNames: method + ["grpc_code"])
        handlingSeconds = registry.histogram(
            "grpc_server_handling_seconds", help: "Response latency (seconds) of gRPC handled by the server.",
            labelNames: method,
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        messagesSent = registry.counter(
            "grpc_server_msg_sent_total", help: "gRPC stream messages sent by the server.", labelNames: method)
        unknownMethod = MethodSeries(
            .unknown, started: started, handled: handled, seconds: handlingSeconds, messagesSent: messagesSent)
        inFlight = registry.gauge("appstore_gateway_rpcs_in_flight", help: "RPCs (streams) open now.").labels()
    }

    /// Registers served methods (path → go-grpc-prometheus `grpc_type`): each gets its own series, at 0 from now
    /// on. A server registers the methods it serves when it is made.
    public func register(methods served: [String: String]) {
        methods.withLock { table in
            for (path, type) in served where table[path] == nil {
                guard let labels = RPCMethodLabels(path: path, type: type) else { continue }
                table[path] = MethodSeries(
                    labels, started: started, handled: handled, seconds: handlingSeconds, messagesSent: messagesSent)
            }
        }
    }

    /// What records the calls of `method` on loop `loop`: that loop's own cells of the method's series (of the
    /// `unknown` series for nil or an unregistered path; made once per series and loop, so every unregistered path
    /// of a loop shares them), a writer of `accessLog` (none for health checks) and the calls' SERVER spans for
    /// `tracer`.
    package func recorder(
        method: String?, loop: Int, accessLog: (any AccessLog)? = nil, tracer: (any Tracer)? = nil
    ) -> RPCRecorder {
        let shared = method.flatMap { method in methods.withLock { $0[method] } } ?? unknownMethod
        let key = LoopSeriesKey(series: ObjectIdentifier(shared), loop: loop)
        let cells = loopSeries.withLock { table in
            if let made = table[key] { return made }
            let made = LoopSeries(shared, inFlight: inFlight)
            table[key] = made
            return made
        }
        let registered = shared !== unknownMethod
        let writer =
            shared.isHealthCheck
            ? nil : accessLog?.writer(for: shared.labels, path: registered ? method : nil, loop: loop)
        return RPCRecorder(
            series: cells, accessLog: writer,
            spans: tracer.map { ServerSpans(tracer: $0, method: registered ? method : nil) })
    }
}

/// One loop's cells of a method's series (and of the in-flight gauge): what every call counts, in memory only
/// that loop writes. Failed calls, rarer, count into the shared series of their code.
final class LoopSeries: Sendable {
    let shared: MethodSeries
    /// `shared.isHealthCheck`, copied.
    let isHealthCheck: Bool
    let started: StepCell
    let handledOK: StepCell
    let messagesSent: StepCell
    let seconds: Histogram.Cell
    let inFlight: StepCell

    init(_ shared: MethodSeries, inFlight: Gauge) {
        self.shared = shared
        isHealthCheck = shared.isHealthCheck
        started = shared.started.cell()
        handledOK = shared.handled(.ok).cell()
        messagesSent = shared.messagesSent.cell()
        seconds = shared.seconds.cell()
        self.inFlight = inFlight.cell()
    }
}

/// The series of one method, resolved when it is registered: the started, sent and duration series, and
/// the handled series of OK (the common case); other codes are looked up in their family.
final class MethodSeries: Sendable {
    let labels: RPCMethodLabels
    /// A method of the health service, whose calls the access log leaves out (decided once, not per call).
    let isHealthCheck: Bool
    let started: Counter
    let seconds: Histogram
    let messagesSent: Counter
    private let handledOK: Counter
    private let handled: CounterFamily

    init(
        _ labels: RPCMethodLabels, started: CounterFamily, handled: CounterFamily, seconds: HistogramFamily,
        messagesSent: CounterFamily
    ) {
        self.labels = labels
        isHealthCheck = labels.service == HealthService.name
        self.started = started.labels(labels.values)
        self.seconds = seconds.labels(labels.values)
        self.messagesSent = messagesSent.labels(labels.values)
        self.handled = handled
        self.handledOK = handled.labels(labels.values + [RPCMethodLabels.codeName(.ok)])
    }

    /// The handled series of `code`.
    func handled(_ code: StatusCode) -> Counter {
        code == .ok ? handledOK : handled.labels(labels.values + [RPCMethodLabels.codeName(code)])
    }
}
