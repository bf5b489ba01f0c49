import Metrics

/// The Apple client's series of its calls: every HTTP attempt to Apple by app, endpoint, environment, HTTP
/// status and Apple's errorCode, their latency, the retries, Apple's 429s, and the request JWTs signed.
package final class AppleCallMetrics: Sendable {
    package let requests: CounterFamily
    package let seconds: HistogramFamily
    package let retries: CounterFamily
    package let rateLimited: CounterFamily
    package let jwtMints: CounterFamily

    /// The families, registered in `registry`.
    package init(registry: MetricsRegistry) {
        requests = registry.counter(
            "appstore_gateway_apple_requests_total",
            help: "HTTP attempts to Apple, by app, endpoint, environment, HTTP status (0 = no response) and errorCode.",
            labelNames: ["app", "endpoint", "environment", "http_status", "error_code"])
        seconds = registry.histogram(
            "appstore_gateway_apple_request_duration_seconds", help: "Latency of HTTP attempts to Apple.",
            labelNames: ["app", "endpoint", "environment"])
        retries = registry.counter(
            "appstore_gateway_apple_retries_total", help: "Apple calls retried after a failed attempt.",
            labelNames: ["app", "endpoint", "environment"])
        rateLimited = registry.counter(
            "appstore_gateway_apple_rate_limited_total", help: "Apple answers 429 (the endpoint is then blocked).",
            labelNames: ["app", "endpoint", "environment"])
        jwtMints = registry.counter(
            "appstore_gateway_jwt_mints_total", help: "Request JWTs signed (cache misses and refreshes).",
            labelNames: ["app"])
    }

    /// One HTTP attempt to Apple ended: `httpStatus` nil for a transport failure.
    func attempt(
        app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?, seconds: Double
    ) {
        requests.labels(app, endpoint, environment, String(httpStatus ?? 0), errorCode.map(String.init) ?? "")
            .increment()
        self.seconds.labels(app, endpoint, environment).observe(seconds)
        if httpStatus == 429 { rateLimited.labels(app, endpoint, environment).increment() }
    }

    /// An Apple call is retried after a failed attempt.
    func retry(app: String, endpoint: String, environment: String) {
        retries.labels(app, endpoint, environment).increment()
    }

    /// A request JWT was signed (the cache missed or was refreshed).
    func jwtMinted(app: String) {
        jwtMints.labels(app).increment()
    }
}
