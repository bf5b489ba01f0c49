import GatewayFoundation

/// The SERVER span of each sampled call of one method, with OpenTelemetry's RPC conventions: named
/// `service/method`, `rpc.system` grpc, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`, the caller as
/// `enduser.id`. The span's id is the call's own span id (`TraceContext.spanIDValue`), the parent of every span
/// the call makes (Apple, Redis), and its parent the caller's `traceparent` span. Recorded through the `Tracer`
/// seam, as the Apple client records its CLIENT spans: the exporter (Tracing) knows nothing of gRPC.
struct ServerSpans: Sendable {
    /// A span's name and RPC attributes, from a method's path.
    struct Names: Sendable {
        let name: String
        let service: String
        let method: String

        /// "/package.Service/Method" → "package.Service", "Method"; anything else is kept whole as the method.
        init(path: String) {
            let parts = path.split(separator: "/", omittingEmptySubsequences: true)
            if path.hasPrefix("/"), parts.count == 2 {
                service = String(parts[0])
                method = String(parts[1])
                name = "\(service)/\(method)"
            } else {
                service = ""
                method = path
                name = path
            }
        }
    }

    let tracer: any Tracer
    /// The registered method's names, made once; nil for the unregistered paths (named per call).
    let names: Names?

    init(tracer: any Tracer, method: String?) {
        self.tracer = tracer
        names = method.map(Names.init(path:))
    }

    /// Records the span of a call of `path` that ended with `status` after `seconds`, when the call has an
    /// identity and its trace is sampled.
    func record(path: String, status: StatusCode, seconds: Double, annotations: CallAnnotations) {
        guard let identity = annotations.identity else { return }
        let end = tracer.unixNanos()
        let nanoseconds = seconds.isFinite && seconds > 0 ? UInt64(min(seconds * 1e9, Double(end))) : 0
        let names = self.names ?? Names(path: path)
        guard
            var span = tracer.span(
                of: identity.trace, name: names.name, kind: .server, startUnixNanos: end - nanoseconds)
        else { return }
        span.endUnixNanos = end
        span.set("rpc.system", "grpc")
        if !names.service.isEmpty { span.set("rpc.service", names.service) }
        span.set("rpc.method", names.method)
        span.set("rpc.grpc.status_code", status.rawValue)
        if let caller = identity.caller { span.set("enduser.id", caller) }
        if let requestID = identity.requestID { span.set("appstore_gateway.request_id", requestID) }
        for (key, value) in annotations.noted { span.set("appstore_gateway.\(key)", value) }
        // OpenTelemetry's gRPC server conventions: these codes are the server's failures; the rest the caller's.
        switch status {
        case .unknown, .deadlineExceeded, .unimplemented, .internal, .unavailable, .dataLoss:
            span.status = .error(status.description)
        default: break
        }
        tracer.record(span)
    }
}
