import GatewayFoundation
import HTTPServer

/// The limits and timers of the gRPC server, as a value. Each default is the documented default of the
/// configuration key that sets it, declared here only: the gateway's configuration embeds this value.
public struct GRPCServerConfiguration: Sendable, Hashable {
    /// Where to listen (`listen`).
    public var listen = ListenAddress(host: "0.0.0.0", port: 50051)
    /// Event loops (threads); 0 = one per core (`threads`).
    public var threads = 0
    /// HTTP/2 limits and timers (the `limits` and `connection` keys), with the gRPC port's defaults.
    public var http2 = HTTP2Configuration()
    /// The largest request message accepted, RESOURCE_EXHAUSTED above it (`limits.maxReceiveMessageBytes`).
    public var maxReceiveMessageBytes = 4 * 1024 * 1024
    /// How long in-flight calls may run after a shutdown begins before they end with UNAVAILABLE
    /// (`shutdown.grace`).
    public var shutdownGrace: Duration = .seconds(10)
    /// The deadline of a call that sent no `grpc-timeout` (`limits.defaultDeadline`).
    public var defaultDeadline: Duration = .seconds(120)
    /// The longest deadline any call gets; a longer `grpc-timeout` is cut to it (`limits.maxDeadline`).
    public var maxDeadline: Duration = .seconds(1_800)

    public init() {}
}
