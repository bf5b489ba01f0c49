import GRPC
import GatewayFoundation

/// The gRPC server's call events, passed on to `inner` (metrics, access log) and turned into one SERVER
/// span per sampled call, with OpenTelemetry's RPC conventions: named `service/method`, `rpc.system` grpc,
/// `rpc.service`, `rpc.method`, `rpc.grpc.status_code`, the caller as `enduser.id`. The span's id is the
/// call's own span id (`TraceContext.spanIDValue`), the parent of every span the call makes (Apple, Redis),
/// and its parent the caller's `traceparent` span.
public struct TracingRPCEvents: RPCEvents {
    let inner: any RPCEvents
    let tracer: any Tracer

    /// Events recorded by `inner`, with spans for `tracer`.
    public init(inner: any RPCEvents, tracer: any Tracer) {
        self.inner = inner
        self.tracer = tracer
    }

    public func rpcStarted(method: String) { inner.rpcStarted(method: method) }

    public func rpcFinished(
        method: String, status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: CallAnnotations
    ) {
        inner.rpcFinished(
            method: method, status: status, seconds: seconds, metadata: metadata, annotations: annotations)
    }

    public func rpcMessageSent(method: String) { inner.rpcMessageSent(method: method) }

    public func recorder(method: String, loop: Int) -> any RPCRecorder {
        TracingRPCRecorder(inner: inner.recorder(method: method, loop: loop), method: method, tracer: tracer)
    }
}

/// One method's recorder: `inner`'s, and the call's server span when it ends.
final class TracingRPCRecorder: RPCRecorder {
    let inner: any RPCRecorder
    let tracer: any Tracer
    let name: String
    let service: String
    let methodName: String

    init(inner: any RPCRecorder, method: String, tracer: any Tracer) {
        self.inner = inner
        self.tracer = tracer
        // "/package.Service/Method" → "package.Service", "Method"; anything else is kept whole as the method.
        let parts = method.split(separator: "/", omittingEmptySubsequences: true)
        if method.hasPrefix("/"), parts.count == 2 {
            service = String(parts[0])
            methodName = String(parts[1])
            name = "\(service)/\(methodName)"
        } else {
            service = ""
            methodName = method
            name = method
        }
    }

    func started() { inner.started() }

    func messageSent() { inner.messageSent() }

    var logsCalls: Bool { inner.logsCalls }

    func finished(
        status: StatusCode, seconds: Double, metadata: [(name: String, value: String)],
        annotations: @autoclosure () -> CallAnnotations
    ) {
        let made = annotations()
        inner.finished(status: status, seconds: seconds, metadata: metadata, annotations: made)
        guard let identity = made.identity else { return }
        let end = tracer.unixNanos()
        let nanoseconds = seconds.isFinite && seconds > 0 ? UInt64(min(seconds * 1e9, Double(end))) : 0
        guard var span = tracer.span(of: identity.trace, name: name, kind: .server, startUnixNanos: end - nanoseconds)
        else { return }
        span.endUnixNanos = end
        span.set("rpc.system", "grpc")
        if !service.isEmpty { span.set("rpc.service", service) }
        span.set("rpc.method", methodName)
        span.set("rpc.grpc.status_code", status.rawValue)
        if let caller = identity.caller { span.set("enduser.id", caller) }
        if let requestID = identity.requestID { span.set("appstore_gateway.request_id", requestID) }
        for (key, value) in made.noted { span.set("appstore_gateway.\(key)", value) }
        // OpenTelemetry's gRPC server conventions: these codes are the server's failures; the rest the caller's.
        switch status {
        case .unknown, .deadlineExceeded, .unimplemented, .internal, .unavailable, .dataLoss:
            span.status = .error(status.description)
        default: break
        }
        tracer.record(span)
    }
}
