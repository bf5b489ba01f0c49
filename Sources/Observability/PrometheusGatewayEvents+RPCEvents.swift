import GRPC

/// The gRPC server's call events (`rpcStarted`, `rpcFinished`, `rpcMessageSent`) are recorded by the same
/// sink as the rest of the gateway's events.
extension PrometheusGatewayEvents: RPCEvents {}
