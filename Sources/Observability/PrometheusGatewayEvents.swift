import AppStoreDomain
import GRPC
import GatewayFoundation
import Logging
import Metrics
import Synchronization

/// The gateway's events as Prometheus metrics, plus one access-log line per RPC.
///
/// RPC metrics follow go-grpc-prometheus (`grpc_server_*` with `grpc_type`, `grpc_service`, `grpc_method`,
/// `grpc_code`): they are what existing gRPC dashboards, alerts and recording rules expect, and they are
/// native Prometheus names (OpenTelemetry's `rpc.*` names change with the exporter's translation rules).
/// Only methods passed to `register(methods:)` get their own labels; everything else is `unknown`.
public final class PrometheusGatewayEvents: GatewayEvents {
    /// The registry the admin endpoint renders.
    public let registry: MetricsRegistry
    private let logger: Logger
    private let accessLog: Bool
    /// With JSON logs: the access line is built as bytes and queued here (see `AccessLogLine`).
    private let accessLogWriter: LogLineWriter?
    private let accessLine: AccessLogLine
    private let clock: any GatewayClock
    /// Registered methods, each with its series resolved once (one lookup per event, no label hashing).
    private let methods = Lock<[String: MethodSeries]>([:])
    /// The series of every unregistered path.
    private let unknownMethod: MethodSeries
    /// Each loop's cells of each series, made once (bounded by the served methods, plus one, times the loops).
    private let loopSeries = Lock<[LoopSeriesKey: LoopSeries]>([:])
    private struct LoopSeriesKey: Hashable {
        let series: ObjectIdentifier
        let loop: Int
    }

    private let started: CounterFamily
    private let handled: CounterFamily
    private let handlingSeconds: HistogramFamily
    private let messagesSent: CounterFamily
    private let rpcsInFlight: Gauge
    private let appleRequests: CounterFamily
    private let appleSeconds: HistogramFamily
    private let appleRetries: CounterFamily
    private let appleRateLimited: CounterFamily
    private let jwtMints: CounterFamily
    private let verifications: CounterFamily
    /// `verifications`' series of the verdicts named at init, read without the family's lock.
    private let verdictCounters: [String: Counter]
    private let bucketWaits: CounterFamily
    private let bucketWaitSeconds: CounterFamily
    private let bucketRefusals: CounterFamily
    private let coalesced: CounterFamily
    private let requestIDs = RequestIDs()

    /// Metrics in `registry`; with `accessLog`, each RPC (but health checks) is logged at info: as a JSON
    /// line queued on `accessLogWriter` when one is given (the fast path for JSON logs), else on `logger`.
    /// `verdicts`: every verdict a verification can end with, resolved here so counting one takes no lock and
    /// allocates nothing (and each series is on the first scrape, at 0); another verdict is still counted.
    public init(
        registry: MetricsRegistry, logger: Logger, accessLog: Bool, accessLogWriter: LogLineWriter? = nil,
        clock: any GatewayClock = SystemClock(), verdicts: [String] = []
    ) {
        self.registry = registry
        self.logger = logger
        self.accessLog = accessLog && logger.logLevel <= .info
        self.accessLogWriter = accessLogWriter
        self.accessLine = AccessLogLine(label: logger.label, redaction: SecretRedaction())
        self.clock = clock
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
        rpcsInFlight = registry.gauge("appstore_gateway_rpcs_in_flight", help: "RPCs (streams) open now.").labels()
        appleRequests = registry.counter(
            "appstore_gateway_apple_requests_total",
            help: "HTTP attempts to Apple, by app, endpoint, environment, HTTP status (0 = no response) and errorCode.",
            labelNames: ["app", "endpoint", "environment", "http_status", "error_code"])
        appleSeconds = registry.histogram(
            "appstore_gateway_apple_request_duration_seconds", help: "Latency of HTTP attempts to Apple.",
            labelNames: ["app", "endpoint", "environment"])
        appleRetries = registry.counter(
            "appstore_gateway_apple_retries_total", help: "Apple calls retried after a failed attempt.",
            labelNames: ["app", "endpoint", "environment"])
        appleRateLimited = registry.counter(
            "appstore_gateway_apple_rate_limited_total", help: "Apple answers 429 (the endpoint is then blocked).",
            labelNames: ["app", "endpoint", "environment"])
        jwtMints = registry.counter(
            "appstore_gateway_jwt_mints_total", help: "Request JWTs signed (cache misses and refreshes).",
            labelNames: ["app"])
        verifications = registry.counter(
            "appstore_gateway_verifications_total", help: "JWS verifications, by verdict.", labelNames: ["verdict"])
        verdictCounters = Dictionary(
            verdicts.map { [verifications] verdict in (verdict, verifications.labels(verdict)) },
            uniquingKeysWith: { first, _ in first })
        let bucket = ["app", "endpoint", "environment"]
        bucketWaits = registry.counter(
            "appstore_gateway_rate_limit_waits_total",
            help: "Apple calls that waited for a token of the local bucket.", labelNames: bucket)
        bucketWaitSeconds = registry.counter(
            "appstore_gateway_rate_limit_wait_seconds_total",
            help: "Seconds Apple calls spent waiting for local tokens.", labelNames: bucket)
        bucketRefusals = registry.counter(
            "appstore_gateway_rate_limit_refusals_total",
            help: "Apple calls refused by the local bucket (RESOURCE_EXHAUSTED; nothing was sent to Apple).",
            labelNames: bucket)
        coalesced = registry.counter(
            "appstore_gateway_coalesced_calls_total",
            help: "Calls that shared an identical Apple call already in flight instead of making their own.",
            labelNames: ["app", "endpoint"])
    }

    /// Registers the served methods (path → go-grpc-prometheus `grpc_type`); call before serving.
    public func register(methods served: [String: String]) {
        methods.withLock { table in
            for (path, type) in served {
                guard let labels = RPCMethodLabels(path: path, type: type) else { continue }
                table[path] = MethodSeries(
                    labels, path: path, started: started, handled: handled, seconds: handlingSeconds,
                    messagesSent: messagesSent)
            }
        }
    }

    private func series(_ path: String) -> MethodSeries {
        methods.withLock { $0[path] } ?? unknownMethod
    }

    /// `method`'s recorder on loop `loop`: what each call counts goes to that loop's own cells of the series.
    /// The cells are made once per series and loop (the server also asks for a recorder per call to an
    /// unregistered path, which a caller chooses: those all share the `unknown` series' cells of their loop).
    public func recorder(method: String, loop: Int) -> any RPCRecorder {
        let shared = series(method)
        let key = LoopSeriesKey(series: ObjectIdentifier(shared), loop: loop)
        let cells = loopSeries.withLock { table in
            if let made = table[key] { return made }
            let made = LoopSeries(shared, inFlight: rpcsInFlight)
            table[key] = made
            return made
        }
        return MethodRecorder(events: self, path: method, series: cells)
    }

    public func rpcStarted(method: String) {
        started(series(method))
    }

    func started(_ series: MethodSeries) {
        rpcsInFlight.increment()
        series.started.increment()
    }

    public func rpcFinished(
        method path: String, status: StatusCode, seconds: Double,
        metadata: [(name: String, value: String)], annotations: CallAnnotations
    ) {
        finished(
            series(path), path: path, status: status, seconds: seconds, metadata: metadata, annotations: annotations)
    }

    /// Counts the call, and logs it unless it is a health check (`annotations` is read only then).
    func finished(
        _ series: MethodSeries, path: String, status: StatusCode, seconds: Double,
        metadata: [(name: String, value: String)], annotations readAnnotations: @autoclosure () -> CallAnnotations
    ) {
        rpcsInFlight.decrement()
        series.handled(status).increment()
        series.seconds.observe(seconds)
        log(series, path: path, status: status, seconds: seconds, metadata: metadata, annotations: readAnnotations())
    }

    /// Logs the call when the access log is on (`annotations` is read only then). Its caller, `MethodRecorder`,
    /// leaves health checks out before calling.
    func log(
        _ series: MethodSeries, path: String, status: StatusCode, seconds: Double,
        metadata: [(name: String, value: String)], annotations readAnnotations: @autoclosure () -> CallAnnotations
    ) {
        guard accessLog else { return }
        let method = series.labels
        let annotations = readAnnotations()
        // An unregistered path is the caller's text: logged, but cut short.
        let methodText = method == .unknown ? String(path.prefix(200)) : path
        if let accessLogWriter {
            // The server's calls carry their request id in their identity; only a call it never saw through
            // needs one made here.
            let noted = annotations.noted
            let identity = annotations.identity
            let requestID = identity != nil ? "" : madeRequestID(metadata: metadata, noted: noted)
            var line: [UInt8] = []
            line.reserveCapacity(512)
            accessLine.append(
                .init(
                    method: methodText, service: method.service, grpcMethod: method.method, status: status,
                    durationMilliseconds: AccessLogLine.milliseconds(seconds: seconds), requestID: requestID,
                    identity: identity,
                    annotations: noted),
                at: clock.wallNow(), methodMembers: series.accessLogMembers, to: &line)
            line.withUnsafeBytes { accessLogWriter.enqueue($0) }
            return
        }
        let noted = annotations.all
        let requestID = madeRequestID(metadata: metadata, noted: noted)
        var fields: Logger.Metadata = [
            "method": .string(methodText),
            "grpc_service": .string(method.service), "grpc_method": .string(method.method),
            "status": .string(status.description), "grpc_code": .stringConvertible(Int(status.rawValue)),
            "duration_ms": .stringConvertible(AccessLogLine.milliseconds(seconds: seconds)),
            "request_id": .string(requestID),
        ]
        for (name, value) in noted { fields[name] = .string(value) }
        logger.info("rpc", metadata: fields)
    }

    /// The request id of a call without an identity: the caller's `x-request-id`, else none when the handler
    /// noted one, else a new one.
    private func madeRequestID(metadata: [(name: String, value: String)], noted: [(name: String, value: String)])
        -> String
    {
        metadata.first(where: { $0.name == "x-request-id" })?.value
            ?? (noted.contains { $0.name == "request_id" } ? "" : requestIDs.next())
    }

    public func rpcMessageSent(method: String) {
        series(method).messagesSent.increment()
    }

    public func appleAttempt(
        app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?,
        seconds: Double
    ) {
        appleRequests.labels(app, endpoint, environment, String(httpStatus ?? 0), errorCode.map(String.init) ?? "")
            .increment()
        appleSeconds.labels(app, endpoint, environment).observe(seconds)
        if httpStatus == 429 { appleRateLimited.labels(app, endpoint, environment).increment() }
    }

    public func appleRetry(app: String, endpoint: String, environment: String) {
        appleRetries.labels(app, endpoint, environment).increment()
    }

    public func jwtMinted(app: String) {
        jwtMints.labels(app).increment()
    }

    public func verification(verdict: String) {
        (verdictCounters[verdict] ?? verifications.labels(verdict)).increment()
    }

    public func rateLimitWaited(app: String, endpoint: String, environment: String, seconds: Double) {
        bucketWaits.labels(app, endpoint, environment).increment()
        bucketWaitSeconds.labels(app, endpoint, environment).increment(by: max(0, seconds))
    }

    public func rateLimitRefused(app: String, endpoint: String, environment: String) {
        bucketRefusals.labels(app, endpoint, environment).increment()
    }

    public func callCoalesced(app: String, endpoint: String) {
        coalesced.labels(app, endpoint).increment()
    }
}

/// One method's recorder on one loop: its series resolved once, every count into that loop's cells, the
/// access log line written by the events.
final class MethodRecorder: RPCRecorder {
    let events: PrometheusGatewayEvents
    let path: String
    let series: LoopSeries

    init(events: PrometheusGatewayEvents, path: String, series: LoopSeries) {
        self.events = events
        self.path = path
        self.series = series
    }

    func started() {
        series.inFlight.increment()
        series.started.increment()
    }

    func messageSent() { series.messagesSent.increment() }

    var logsCalls: Bool { !series.isHealthCheck }

    func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: @autoclosure () -> CallAnnotations
    ) {
        series.inFlight.decrement()
        if status == .ok { series.handledOK.increment() } else { series.shared.handled(status).increment() }
        series.seconds.observe(seconds)
        // A health check is left out of the access log, decided here without reading the method's shared series
        // (one object every loop's calls of the method would otherwise retain and release): the one place
        // this is decided.
        guard logsCalls else { return }
        events.log(
            series.shared, path: path, status: status, seconds: seconds, metadata: metadata,
            annotations: annotations())
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
    /// The access log's members naming the method, escaped once (nil for unregistered paths).
    let accessLogMembers: AccessLogLine.MethodMembers?
    let started: Counter
    let seconds: Histogram
    let messagesSent: Counter
    private let handledOK: Counter
    private let handled: CounterFamily

    init(
        _ labels: RPCMethodLabels, path: String? = nil, started: CounterFamily, handled: CounterFamily,
        seconds: HistogramFamily, messagesSent: CounterFamily
    ) {
        self.labels = labels
        isHealthCheck = labels.service == HealthService.name
        accessLogMembers = path.map {
            AccessLogLine.MethodMembers(method: $0, service: labels.service, grpcMethod: labels.method)
        }
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

/// Request ids for calls that brought none: unique in this process, short, not guessable across runs.
final class RequestIDs: Sendable {
    private let counter = Atomic<UInt64>(0)
    private let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)

    func next() -> String { "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)" }
}
