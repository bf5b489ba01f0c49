import GatewayFoundation
import HTTPServer
import Metrics

extension GRPCServer {
    /// What a server of `services` answers its HTTP/2 streams with — routing, the call guard, deadlines and a
    /// `ServerCall` per call — for `loops` event loops, without a socket. A test seam, for the package only: the
    /// service harness (Tests/ServiceHarness) hands it request heads and bytes over in-memory streams, so every
    /// call it makes takes the path a served call takes. Its streams must be on loops indexed `0..<loops`.
    package static func responder(
        configuration: GRPCServerConfiguration, services: [any GRPCService], loops: Int = 1,
        metrics: RPCMetrics = RPCMetrics(registry: MetricsRegistry()), accessLog: (any AccessLog)? = nil,
        tracer: (any Tracer)? = nil, callGuard: (any CallGuard)? = nil
    ) -> any HTTP2Responder {
        Router(
            configuration: configuration, loops: loops, services: services, metrics: metrics, accessLog: accessLog,
            tracer: tracer, callGuard: callGuard)
    }
}

extension Router {
    /// The router of a server with `configuration`'s limits and deadlines on `loops` event loops.
    init(
        configuration: GRPCServerConfiguration, loops: Int, services: [any GRPCService], metrics: RPCMetrics,
        accessLog: (any AccessLog)?, tracer: (any Tracer)?, callGuard: (any CallGuard)?
    ) {
        self.init(
            services: services, loops: loops, streamWriteHighWatermark: configuration.http2.streamWriteHighWatermark,
            maxReceiveMessageBytes: configuration.maxReceiveMessageBytes, metrics: metrics, accessLog: accessLog,
            tracer: tracer, callGuard: callGuard,
            deadlines: DeadlinePolicy(
                defaultTimeout: configuration.defaultDeadline, maximumTimeout: configuration.maxDeadline))
    }
}
