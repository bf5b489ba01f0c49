import GRPC
import GatewayCore
import ProtoCodec

/// appstore.gateway.v1.AppStoreGateway: the three RPCs of the public contract.
public struct AppStoreGatewayService: GRPCService {
    /// The service's full name, as health checks and reflection name it.
    public static let name = "appstore.gateway.v1.AppStoreGateway"

    public init() {}

    public var methods: [String: MethodHandler] {
        [
            "/\(Self.name)/GetHistory": .unary(GetHistoryRequest.self) {
                _, _ throws(RPCStatus) -> GetHistoryResponse in
                throw RPCStatus(.unimplemented, "GetHistory is not available in this build yet (upstream client pending)")
            },
            "/\(Self.name)/StreamNotifications": .serverStreaming(StreamNotificationsRequest.self, NotificationEvent.self) {
                _, _, _ throws(RPCStatus) in
                throw RPCStatus(.unimplemented, "StreamNotifications is not available in this build yet (upstream client pending)")
            },
            "/\(Self.name)/VerifyJWS": .unaryInline(VerifyJWSRequest.self) {
                _, _ -> Result<VerifyJWSResponse, RPCStatus> in
                .failure(RPCStatus(.unimplemented, "VerifyJWS is not available in this build yet (verifier pending)"))
            },
        ]
    }
}
