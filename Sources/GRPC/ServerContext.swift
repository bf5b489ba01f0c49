import GatewayFoundation
import HTTPServer
import Synchronization

/// What a handler knows about its call besides the request message. A class: handed from the loop to the
/// handler and its task without copying its fields.
public final class ServerContext: Sendable {
    /// The full method path, e.g. "/appstore.gateway.v1.AppStoreGateway/GetHistory".
    public let method: String
    /// Custom metadata sent by the client (lowercase names; `-bin` values still base64).
    public let metadata: [(name: String, value: String)]
    /// The call's deadline on the monotonic clock (`MonotonicInstant.now()`), nil when the call has none.
    public let deadline: MonotonicInstant?
    /// What the handler notes for the call's log line (also `CallAnnotations.current` in its task): made on
    /// first use, so a call that nobody logs and whose handler notes nothing (a health check) makes none.
    public var annotations: CallAnnotations {
        if let made = madeAnnotations.load() { return made }
        return madeAnnotations.storeIfNil(
            CallAnnotations(
                identity: .init(requestID: callerRequestID, trace: trace, caller: admitted?.caller.displayName)))
    }
    /// Set once, by whichever thread asks first (the handler's task or the loop logging the call): the first
    /// one made is every caller's.
    private let madeAnnotations = AtomicLazyReference<CallAnnotations>()
    /// The call's W3C trace context (also `TraceContext.current` in its task): the caller's `traceparent`
    /// continued, or a new trace.
    public let trace: TraceContext
    /// The call's `x-request-id`: the caller's, or one made from the trace; echoed in the response headers.
    public var requestID: String { callerRequestID ?? RequestID.generated(for: trace) }
    /// The caller's `x-request-id` when it is acceptable (`RequestID.accepted`).
    let callerRequestID: String?
    /// Who is calling, as the server's `CallGuard` established before the call started (nil: anonymous, open
    /// mode, or no guard), bound by itself for the handler's task (`AdmittedCaller.bindingCurrent`).
    public var caller: (any AdmittedCaller)? { admitted?.caller }
    /// The caller in a box: one word, nil for a call without one (every health check). An optional existential
    /// held here instead would be copied and destroyed through the runtime's generic witnesses on every call.
    private let admitted: AdmittedCallerBox?
    /// The guard that admitted the call (through its loop's handle); the typed handlers ask it about the
    /// request's `app`.
    let callGuard: LoopCallGuard?

    /// A context; the trace and request id come from `metadata` (traceparent, tracestate, x-request-id),
    /// and `annotations` carry them (with the caller) into the call's log line.
    public convenience init(
        method: String, metadata: [(name: String, value: String)], deadline: MonotonicInstant?,
        caller: (any AdmittedCaller)? = nil, callGuard: (any CallGuard)? = nil
    ) {
        self.init(
            method: method, metadata: metadata, deadline: deadline, admitted: caller.map(AdmittedCallerBox.init),
            callGuard: callGuard.map(LoopCallGuard.init))
    }

    init(
        method: String, metadata: [(name: String, value: String)], deadline: MonotonicInstant?,
        admitted: AdmittedCallerBox?, callGuard: LoopCallGuard?
    ) {
        self.method = method
        self.admitted = admitted
        self.callGuard = callGuard
        self.metadata = metadata
        self.deadline = deadline
        var traceparent: String?
        var tracestate: String?
        var requestID: String?
        for field in metadata {
            switch field.name {
            case "traceparent": traceparent = traceparent ?? field.value
            case "tracestate": tracestate = tracestate ?? field.value
            case "x-request-id": requestID = requestID ?? field.value
            default: break
            }
        }
        trace = TraceContext(traceparent: traceparent, tracestate: tracestate)
        callerRequestID = RequestID.accepted(requestID)
    }

    /// Runs `body` with the bytes of the call's `x-request-id`, formatted on the stack when generated.
    func withRequestIDBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        guard var callerRequestID else { return RequestID.withGenerated(for: trace, body) }
        return callerRequestID.withUTF8(body)
    }

    /// Runs a handler's `body` with the call's task-locals bound, the same on every path: its trace (the
    /// outgoing `traceparent` and the log lines' trace ids), its caller and its annotations.
    func bound<Result: Sendable>(_ body: () async -> Result) async -> Result {
        await TraceContext.$current.withValue(trace) {
            guard let caller = admitted?.caller else {
                return await CallAnnotations.$current.withValue(annotations) { await body() }
            }
            return await caller.bindingCurrent {
                await CallAnnotations.$current.withValue(annotations) { await body() }
            }
        }
    }

    /// Nil when the call may use the app a request names; else the PERMISSION_DENIED status (counted).
    @usableFromInline
    func refusal(forApp app: String) -> RPCStatus? {
        guard let callGuard else { return nil }
        // Noted before the guard is asked: a policy change that lands while it decides under the old policy
        // then finds the app when it checks the open calls again (a refused call ends anyway).
        admitted?.named(app: app)
        return callGuard.shared.authorize(caller, app: app, method: method)
    }

    /// The status to end the call with now that the guard's policy changed (nil: it may go on).
    func recheck() -> RPCStatus? {
        callGuard?.shared.recheck(caller, method: method, apps: admitted?.namedApps ?? [])
    }

    /// Nil when the call may use `app` (a name or bundle id a request carries outside a top-level `app` field,
    /// e.g. a list of apps); else the PERMISSION_DENIED status (counted), as the typed handlers' own check.
    public func authorization(forApp app: String) -> RPCStatus? { refusal(forApp: app) }

    /// The first value of a metadata entry.
    public func metadataValue(_ name: String) -> String? {
        metadata.first(where: { $0.name == name })?.value
    }

    /// Time left before the deadline (nil = no deadline, zero = passed).
    public var remaining: Duration? {
        guard let deadline else { return nil }
        return max(.zero, deadline - .now())
    }
}

/// Sends the messages of a server-streaming call; `send` waits while the client reads slowly.
public protocol ResponseStreamWriter: Sendable {
    /// Queues one message; suspends while too much is buffered for the client, and throws CANCELLED (or the
    /// status that ended the call) once the call is over.
    func send(_ message: FramedMessage) async throws(RPCStatus)

    /// Like `send(_:)`, and from the moment the message is queued, `shutdownStatus` is the status the
    /// call ends with if a server shutdown's grace period ends it (instead of the server's generic
    /// UNAVAILABLE): e.g. UNAVAILABLE with a resume cursor naming this message. Both happen together on the
    /// call's loop, so the status never names a message that was not queued, nor lags one that was.
    func send(_ message: FramedMessage, shutdownStatus: RPCStatus) async throws(RPCStatus)

    /// Sets the status a shutdown ends the call with, before any message (e.g. the cursor the call resumed from).
    func setShutdownStatus(_ status: RPCStatus) async
}

extension ResponseStreamWriter {
    /// Writers without a shutdown hook send the message and keep the server's status.
    public func send(_ message: FramedMessage, shutdownStatus: RPCStatus) async throws(RPCStatus) {
        try await send(message)
    }

    /// Writers without a shutdown hook ignore it.
    public func setShutdownStatus(_ status: RPCStatus) async {}
}

/// What a `unaryInlineOrTask` handler decided on the event loop.
public enum InlineOrTask: Sendable {
    /// The answer, computed inline.
    case done(Result<FramedMessage, RPCStatus>)
    /// The work that remains, to run as a Swift task (never on the loop).
    case task(@Sendable () async -> Result<FramedMessage, RPCStatus>)
}

/// How a method is served.
public enum MethodHandler: Sendable {
    /// Runs on the event loop thread: only for cheap, non-blocking work (health Check, JWS verification).
    /// Returns the response message, framed.
    case unaryInline(@Sendable (_ request: [UInt8], _ context: ServerContext) -> Result<FramedMessage, RPCStatus>)
    /// Starts on the event loop thread, which either answers at once (cheap work) or hands back the rest of
    /// the work to run as a Swift task (e.g. a VerifyJWS whose chain is not cached).
    case unaryInlineOrTask(@Sendable (_ request: [UInt8], _ context: ServerContext) -> InlineOrTask)
    /// Runs as a Swift task; returns the response message, framed.
    case unary(@Sendable (_ request: [UInt8], _ context: ServerContext) async throws(RPCStatus) -> FramedMessage)
    /// Runs as a Swift task sending any number of messages; returning ends the call with OK.
    case serverStreaming(
        @Sendable (_ request: [UInt8], _ context: ServerContext, _ writer: any ResponseStreamWriter)
            async throws(RPCStatus)
            -> Void)
    /// Runs as a Swift task from the request head on, reading messages as they arrive (the sequence ends
    /// at the client's END_STREAM) and sending any number back.
    case bidiStreaming(
        @Sendable (_ requests: AsyncStream<[UInt8]>, _ context: ServerContext, _ writer: any ResponseStreamWriter)
            async throws(RPCStatus) -> Void)
}
