import GatewayFoundation

/// What the gateway reports as it works below the gRPC layer: one sink for metrics, so the layers that see
/// an event (the Apple client, the verifier) need not know how it is recorded. RPC starts and ends are the
/// gRPC server's `RPCEvents`. Every method is called on hot paths: implementations must be cheap and
/// thread-safe.
public protocol GatewayEvents: Sendable {
    /// One HTTP attempt to Apple ended: `httpStatus` nil for a transport failure.
    func appleAttempt(
        app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?,
        seconds: Double)
    /// An Apple call is retried after a failed attempt.
    func appleRetry(app: String, endpoint: String, environment: String)
    /// A request JWT was signed (the cache missed or was refreshed).
    func jwtMinted(app: String)
    /// A JWS was verified with this verdict (e.g. "ok", "invalidSignature").
    func verification(verdict: String)
    /// An Apple call waited `seconds` for a token of the local bucket.
    func rateLimitWaited(app: String, endpoint: String, environment: String, seconds: Double)
    /// An Apple call was refused by the local bucket (RESOURCE_EXHAUSTED, nothing sent to Apple).
    func rateLimitRefused(app: String, endpoint: String, environment: String)
    /// A call joined an identical one already in flight instead of calling Apple itself.
    func callCoalesced(app: String, endpoint: String)
}

extension GatewayEvents {
    public func appleAttempt(
        app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?,
        seconds: Double
    ) {}
    public func appleRetry(app: String, endpoint: String, environment: String) {}
    public func jwtMinted(app: String) {}
    public func verification(verdict: String) {}
    public func rateLimitWaited(app: String, endpoint: String, environment: String, seconds: Double) {}
    public func rateLimitRefused(app: String, endpoint: String, environment: String) {}
    public func callCoalesced(app: String, endpoint: String) {}
}

/// Records nothing.
public struct SilentGatewayEvents: GatewayEvents {
    public init() {}
}
