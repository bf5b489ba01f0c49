import AppStoreDomain
import GatewayFoundation
import Metrics

/// The gateway's events below the gRPC layer as Prometheus metrics: the Apple client's attempts, retries, JWT
/// mints and local buckets, the verifications, the coalesced calls.
public final class PrometheusGatewayEvents: GatewayEvents {
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

    /// Metrics in `registry`. `verdicts`: every verdict a verification can end with, resolved here so counting
    /// one takes no lock and allocates nothing (and each series is on the first scrape, at 0); another verdict is
    /// still counted.
    public init(registry: MetricsRegistry, verdicts: [String] = []) {
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
