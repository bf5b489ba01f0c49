extension MethodHandler {
    /// The call type as go-grpc-prometheus names it in `grpc_type`: unary, client_stream, server_stream
    /// or bidi_stream.
    public var grpcType: String {
        switch self {
        case .unaryInline, .unaryInlineOrTask, .unary: "unary"
        case .serverStreaming: "server_stream"
        case .bidiStreaming: "bidi_stream"
        }
    }
}

extension GRPCService {
    /// Each method path of this service with its `grpcType`, for metric labels of registered methods only.
    public var methodTypes: [String: String] { methods.mapValues(\.grpcType) }
}
