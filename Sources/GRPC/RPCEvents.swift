import GatewayCore

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
}

extension RPCEvents {
    public func rpcStarted(method: String) {}
    public func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations
    ) {}
    public func rpcMessageSent(method: String) {}
}

/// Records nothing.
public struct SilentRPCEvents: RPCEvents {
    public init() {}
}
