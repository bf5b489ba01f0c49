import Configuration
import GRPC

extension GRPCServerConfiguration {
    /// The gRPC server settings of a gateway configuration: its `limits`, `connection` and `shutdown` keys, in
    /// milliseconds there (0 = never where the key allows it), as the server's durations.
    init(_ configuration: GatewayConfiguration) {
        self.init()
        listen = configuration.listen
        threads = configuration.threads
        maxReceiveMessageBytes = configuration.limits.maxReceiveMessageBytes
        shutdownGrace = .key(configuration.shutdown.graceMilliseconds)
        http2.maxConcurrentStreams = UInt32(configuration.limits.maxConcurrentStreams)
        http2.maxHeaderListSize = UInt32(configuration.limits.maxHeaderListBytes)
        http2.initialWindowSize = UInt32(configuration.limits.initialWindowBytes)
        http2.streamWriteHighWatermark = configuration.limits.streamWriteBufferBytes
        http2.idleTimeout = .keyOrNever(configuration.connection.maxIdleMilliseconds)
        http2.keepaliveTime = .keyOrNever(configuration.connection.keepaliveTimeMilliseconds)
        http2.keepaliveTimeout = .key(configuration.connection.keepaliveTimeoutMilliseconds)
        http2.maxConnectionAge = .keyOrNever(configuration.connection.maxAgeMilliseconds)
        http2.maxConnectionAgeGrace = .key(configuration.connection.maxAgeGraceMilliseconds)
        http2.minClientPingInterval = .key(configuration.connection.minClientPingIntervalMilliseconds)
        http2.permitClientPingWithoutCalls = configuration.connection.permitClientPingWithoutCalls
        http2.maxPingStrikes = configuration.connection.maxPingStrikes
        http2.maxBufferedBytesPerConnection = configuration.limits.maxBufferedBytesPerConnection
        http2.maxBufferedBytes = configuration.limits.maxBufferedBytes
        http2.maxConnections = configuration.limits.maxConnections
        http2.maxPendingHandshakes = configuration.limits.maxPendingHandshakes
        http2.handshakeTimeout = .keyOrNever(configuration.connection.handshakeTimeoutMilliseconds)
        defaultDeadline = .key(configuration.limits.defaultDeadlineMilliseconds)
        maxDeadline = .key(configuration.limits.maxDeadlineMilliseconds)
    }
}

extension Duration {
    /// A configuration key's milliseconds, saturating.
    fileprivate static func key(_ milliseconds: UInt64) -> Duration { .milliseconds(Int64(clamping: milliseconds)) }

    /// A configuration key's milliseconds, where 0 means never: nil.
    fileprivate static func keyOrNever(_ milliseconds: UInt64) -> Duration? {
        milliseconds == 0 ? nil : key(milliseconds)
    }
}
