import GatewayFoundation

/// What the gRPC server reports about each call: one sink for RPC metrics and the access log, so the server
/// need not know how they are recorded. Every method is called on hot paths: implementations must be cheap
/// and thread-safe.
public protocol RPCEvents: Sendable {
    /// An RPC began.
    func rpcStarted(method: String)
    /// An RPC ended with `status` after `seconds`; `annotations` holds what its handler noted (app, ids).
    func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations)
    /// A response message of an RPC was handed to the transport.
    func rpcMessageSent(method: String)
    /// What records the calls of `method` served by event loop `loop` (its index): the server asks once per
    /// served method and loop when it starts, so a call's events cost no lookup by name, and uses each
    /// recorder on its loop's thread only (so a recorder may keep per-loop counts no other loop touches).
    /// By default, the `rpc…` methods above with the name.
    func recorder(method: String, loop: Int) -> any RPCRecorder
}

extension RPCEvents {
    public func rpcStarted(method: String) {}
    public func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations
    ) {}
    public func rpcMessageSent(method: String) {}
    public func recorder(method: String, loop: Int) -> any RPCRecorder {
        NamedRPCRecorder(events: self, method: method)
    }
}

/// Records one method's calls (see `RPCEvents.recorder(method:)`). A class: every call holds its method's
/// recorder as one reference, not a boxed value copied per call.
public protocol RPCRecorder: AnyObject, Sendable {
    /// A call began.
    func started()
    /// A response message was handed to the transport.
    func messageSent()
    /// The call ended with `status` after `seconds`; `annotations` holds what its handler noted (read only by a
    /// recorder that logs the call, so a call nobody logs never makes them).
    func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: @autoclosure () -> CallAnnotations)
    /// Whether the calls it records get an access-log line. A call without one (a health check) is sent no
    /// generated `x-request-id`: a generated id exists to find the call's line, and there is none to find.
    var logsCalls: Bool { get }
}

extension RPCRecorder {
    public var logsCalls: Bool { true }
}

/// A recorder that reports to `events` by the method's name.
public final class NamedRPCRecorder: RPCRecorder {
    let events: any RPCEvents
    let method: String

    public init(events: any RPCEvents, method: String) {
        self.events = events
        self.method = method
    }

    public func started() { events.rpcStarted(method: method) }
    public func messageSent() { events.rpcMessageSent(method: method) }
    public func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: @autoclosure () -> CallAnnotations
    ) {
        events.rpcFinished(
            method: method, status: status, seconds: seconds, metadata: metadata, annotations: annotations())
    }
}

/// Records nothing.
public struct SilentRPCEvents: RPCEvents {
    public init() {}
}
