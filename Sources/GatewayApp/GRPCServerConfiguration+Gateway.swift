import GRPC
import GatewayCore

extension GRPCServerConfiguration {
    /// The gRPC server settings of a gateway configuration.
    init(_ configuration: GatewayConfiguration) {
        self.init()
        listen = configuration.listen
        threads = configuration.threads
        maxReceiveMessageBytes = configuration.limits.maxReceiveMessageBytes
        shutdownGraceMilliseconds = configuration.shutdown.graceMilliseconds
        http2.maxConcurrentStreams = UInt32(configuration.limits.maxConcurrentStreams)
        http2.maxHeaderListSize = UInt32(configuration.limits.maxHeaderListBytes)
        http2.initialWindowSize = UInt32(configuration.limits.initialWindowBytes)
        http2.streamWriteHighWatermark = configuration.limits.streamWriteBufferBytes
        http2.idleTimeoutMilliseconds = configuration.connection.maxIdleMilliseconds
        http2.keepaliveTimeMilliseconds = configuration.connection.keepaliveTimeMilliseconds
        http2.keepaliveTimeoutMilliseconds = configuration.connection.keepaliveTimeoutMilliseconds
        http2.maxConnectionAgeMilliseconds = configuration.connection.maxAgeMilliseconds
        http2.maxConnectionAgeGraceMilliseconds = configuration.connection.maxAgeGraceMilliseconds
        http2.minClientPingIntervalMilliseconds = configuration.connection.minClientPingIntervalMilliseconds
        http2.permitClientPingWithoutCalls = configuration.connection.permitClientPingWithoutCalls
        http2.maxPingStrikes = configuration.connection.maxPingStrikes
        http2.maxBufferedBytesPerConnection = configuration.limits.maxBufferedBytesPerConnection
        http2.maxBufferedBytes = configuration.limits.maxBufferedBytes
        http2.maxConnections = configuration.limits.maxConnections
        http2.maxPendingHandshakes = configuration.limits.maxPendingHandshakes
        http2.handshakeTimeoutMilliseconds = configuration.connection.handshakeTimeoutMilliseconds
        defaultDeadlineMilliseconds = configuration.limits.defaultDeadlineMilliseconds
        maxDeadlineMilliseconds = configuration.limits.maxDeadlineMilliseconds
    }
}
