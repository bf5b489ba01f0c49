/// The method labels of an RPC, named as go-grpc-prometheus names them (`grpc_type`, `grpc_service`,
/// `grpc_method`, `grpc_code`), so the community's gRPC dashboards and alerts work unchanged.
///
/// Only registered methods get their own labels; every other path (a caller chooses it freely) counts
/// under `unknown`, so the number of series stays fixed whatever callers send.
public struct RPCMethodLabels: Sendable, Hashable {
    /// `grpc_type`: unary, client_stream, server_stream, bidi_stream, or unknown.
    public var type: String
    /// `grpc_service`: the fully qualified service name, e.g. appstore.gateway.v1.AppStoreGateway.
    public var service: String
    /// `grpc_method`: the method name, e.g. GetHistory.
    public var method: String

    /// The labels for unregistered paths.
    public static let unknown = RPCMethodLabels(type: "unknown", service: "unknown", method: "unknown")

    /// The labels for `path` ("/package.Service/Method") registered with `type`.
    package init?(path: String, type: String) {
        guard path.first == "/", let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return nil }
        service = String(path[path.index(after: path.startIndex)..<slash])
        method = String(path[path.index(after: slash)...])
        self.type = type
    }

    package init(type: String, service: String, method: String) {
        self.type = type
        self.service = service
        self.method = method
    }

    var values: [String] { [type, service, method] }

    /// A gRPC code as Go's `codes.Code.String()` spells it (go-grpc-prometheus's `grpc_code` values).
    package static func codeName(_ code: StatusCode) -> String {
        switch code {
        case .ok: "OK"
        case .cancelled: "Canceled"
        case .unknown: "Unknown"
        case .invalidArgument: "InvalidArgument"
        case .deadlineExceeded: "DeadlineExceeded"
        case .notFound: "NotFound"
        case .alreadyExists: "AlreadyExists"
        case .permissionDenied: "PermissionDenied"
        case .resourceExhausted: "ResourceExhausted"
        case .failedPrecondition: "FailedPrecondition"
        case .aborted: "Aborted"
        case .outOfRange: "OutOfRange"
        case .unimplemented: "Unimplemented"
        case .internal: "Internal"
        case .unavailable: "Unavailable"
        case .dataLoss: "DataLoss"
        case .unauthenticated: "Unauthenticated"
        }
    }
}
