import GRPC
import ProtoCodec

extension MethodHandler {
    /// `unary(_:_:)` whose body also gets the request's bytes as they arrived, e.g. as a coalescing key that
    /// costs no second serialization. Decoding and the per-app authorization are the typed handler's own (the
    /// body runs only once they passed); the bytes are the ones they decoded.
    static func unaryWithReceivedBytes<Request: ProtoMessage, Response: ProtoMessage, Failure: RPCStatusConvertible>(
        _ request: Request.Type,
        _ body: @escaping @Sendable (Request, _ received: [UInt8], ServerContext) async throws(Failure) -> Response
    ) -> MethodHandler {
        .unary { bytes, context throws(RPCStatus) in
            let typed = MethodHandler.unary(Request.self) { request, context throws(Failure) in
                try await body(request, bytes, context)
            }
            guard case .unary(let decodeAndRun) = typed else { preconditionFailure("a typed unary handler is unary") }
            return try await decodeAndRun(bytes, context)
        }
    }
}
