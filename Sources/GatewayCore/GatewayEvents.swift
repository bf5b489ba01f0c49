/// What the gateway reports as it works: one sink for metrics and access logs, so the layers that see an
/// event (the gRPC server, the Apple client, the verifier) need not know how it is recorded. Every method
/// is called on hot paths: implementations must be cheap and thread-safe.
public protocol GatewayEvents: Sendable {
    /// An RPC began.
    func rpcStarted(method: String)
    /// An RPC ended with `status` after `seconds`; `annotations` holds what its handler noted (app, ids).
    func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations)
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
    /// A response message of an RPC was handed to the transport.
    func rpcMessageSent(method: String)
    /// An Apple call waited `seconds` for a token of the local bucket.
    func rateLimitWaited(app: String, endpoint: String, environment: String, seconds: Double)
    /// An Apple call was refused by the local bucket (RESOURCE_EXHAUSTED, nothing sent to Apple).
    func rateLimitRefused(app: String, endpoint: String, environment: String)
    /// A call joined an identical one already in flight instead of calling Apple itself.
    func callCoalesced(app: String, endpoint: String)
    /// What records the calls of `method`: the server asks once per served method when it starts, so a
    /// call's events cost no lookup by name. By default, the `rpc…` methods above with the name.
    func recorder(method: String) -> any RPCRecorder
}

/// Records one method's calls (see `GatewayEvents.recorder(method:)`).
public protocol RPCRecorder: Sendable {
    /// A call began.
    func started()
    /// A response message was handed to the transport.
    func messageSent()
    /// The call ended with `status` after `seconds`; `annotations` holds what its handler noted.
    func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)], annotations: CallAnnotations)
}

/// A recorder that reports to `events` by the method's name.
public struct NamedRPCRecorder: RPCRecorder {
    let events: any GatewayEvents
    let method: String

    public init(events: any GatewayEvents, method: String) {
        self.events = events
        self.method = method
    }

    public func started() { events.rpcStarted(method: method) }
    public func messageSent() { events.rpcMessageSent(method: method) }
    public func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)], annotations: CallAnnotations
    ) {
        events.rpcFinished(
            method: method, status: status, seconds: seconds, metadata: metadata, annotations: annotations)
    }
}

extension GatewayEvents {
    public func rpcStarted(method: String) {}
    public func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations
    ) {}
    public func appleAttempt(
        app: String, endpoint: String, environment: String, httpStatus: Int?, errorCode: Int?,
        seconds: Double
    ) {}
    public func appleRetry(app: String, endpoint: String, environment: String) {}
    public func jwtMinted(app: String) {}
    public func verification(verdict: String) {}
    public func rpcMessageSent(method: String) {}
    public func rateLimitWaited(app: String, endpoint: String, environment: String, seconds: Double) {}
    public func rateLimitRefused(app: String, endpoint: String, environment: String) {}
    public func callCoalesced(app: String, endpoint: String) {}
    public func recorder(method: String) -> any RPCRecorder { NamedRPCRecorder(events: self, method: method) }
}

/// Records nothing.
public struct SilentGatewayEvents: GatewayEvents {
    public init() {}
}
