import GatewayCore
import Logging
import Synchronization

/// The gateway's events as Prometheus metrics, plus one access-log line per RPC.
public final class PrometheusGatewayEvents: GatewayEvents {
    /// The registry the admin endpoint renders.
    public let registry: MetricsRegistry
    private let logger: Logger
    private let accessLog: Bool

    private let rpcs: CounterFamily
    private let rpcSeconds: HistogramFamily
    private let rpcsInFlight: Gauge
    private let appleRequests: CounterFamily
    private let appleSeconds: HistogramFamily
    private let appleRetries: CounterFamily
    private let appleRateLimited: CounterFamily
    private let jwtMints: CounterFamily
    private let verifications: CounterFamily
    private let requestCounter = Atomic<UInt64>(0)
    private let requestPrefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)

    /// Metrics in `registry`; with `accessLog`, each RPC (but health checks) is logged at info on `logger`.
    public init(registry: MetricsRegistry, logger: Logger, accessLog: Bool) {
        self.registry = registry
        self.logger = logger
        self.accessLog = accessLog
        rpcs = registry.counter(
            "appstore_gateway_rpcs_total", help: "RPCs served, by method and gRPC status.", labelNames: ["method", "status"])
        rpcSeconds = registry.histogram(
            "appstore_gateway_rpc_duration_seconds", help: "RPC latency from request head to status, by method.",
            labelNames: ["method"], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        rpcsInFlight = registry.gauge("appstore_gateway_rpcs_in_flight", help: "RPCs (streams) open now.").labels()
        appleRequests = registry.counter(
            "appstore_gateway_apple_requests_total",
            help: "HTTP attempts to Apple, by app, endpoint, environment, HTTP status (0 = no response) and errorCode.",
            labelNames: ["app", "endpoint", "environment", "http_status", "error_code"])
        appleSeconds = registry.histogram(
            "appstore_gateway_apple_request_duration_seconds", help: "Latency of HTTP attempts to Apple.",
            labelNames: ["endpoint", "environment"])
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
    }

    public func rpcStarted(method: String) {
        rpcsInFlight.increment()
    }

    public func rpcFinished(method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
                            annotations: CallAnnotations) {
        rpcsInFlight.decrement()
        rpcs.labels(method, status.description).increment()
        rpcSeconds.labels(method).observe(seconds)
        guard accessLog, !method.hasPrefix("/grpc.health.v1.Health/") else { return }
        var fields: Logger.Metadata = [
            "method": .string(method), "status": .string(status.description),
            "duration_ms": .string(String(format: "%.3f", seconds * 1000)),
            "request_id": .string(metadata.first(where: { $0.name == "x-request-id" })?.value ?? nextRequestID()),
        ]
        for (name, value) in annotations.all { fields[name] = .string(value) }
        logger.info("rpc", metadata: fields)
    }

    public func appleAttempt(app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?,
                             seconds: Double) {
        appleRequests.labels(app, endpoint, environment, String(httpStatus ?? 0), errorCode.map(String.init) ?? "")
            .increment()
        appleSeconds.labels(endpoint, environment).observe(seconds)
        if httpStatus == 429 { appleRateLimited.labels(app, endpoint, environment).increment() }
    }

    public func appleRetry(app: String, endpoint: String, environment: String) {
        appleRetries.labels(app, endpoint, environment).increment()
    }

    public func jwtMinted(app: String) {
        jwtMints.labels(app).increment()
    }

    public func verification(verdict: String) {
        verifications.labels(verdict).increment()
    }

    /// A request id for calls that brought none: unique in this process, short, not guessable across runs.
    private func nextRequestID() -> String {
        "\(requestPrefix)-\(requestCounter.add(1, ordering: .relaxed).newValue)"
    }
}
