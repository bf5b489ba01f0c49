import AppStoreDomain
import GRPC
import HTTPServer

extension GatewayConfiguration {
    /// Reads the keys under `limits`, `connection` and `shutdown` into the gRPC server's configuration
    /// (`grpc`) and `shutdown`, one problem per bad key. A time key that may be 0 means "never" there: nil.
    static func transport(_ reader: ConfigurationReader, into config: inout GatewayConfiguration)
        -> [ConfigurationError]
    {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        /// One key read by `read` into `path` when present.
        func set<Value>(
            _ path: WritableKeyPath<GatewayConfiguration, Value>,
            _ read: @autoclosure () throws(ConfigurationError) -> Value?
        ) {
            key { () throws(ConfigurationError) in if let value = try read() { config[keyPath: path] = value } }
        }
        /// An HTTP/2 SETTINGS value.
        func settings(_ path: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> UInt32? {
            try reader.integer(path, in: range).map { UInt32($0) }
        }
        /// A time key where 0 turns the timer off.
        func timer(_ path: String) throws(ConfigurationError) -> Duration?? {
            try reader.duration(path).map { $0 == .zero ? nil : $0 }
        }

        set(\.grpc.maxReceiveMessageBytes, try reader.integer("limits.maxReceiveMessageBytes", in: 1...(1 << 30)))
        // HTTP/2 SETTINGS are 32-bit; each range fits.
        set(\.grpc.http2.maxConcurrentStreams, try settings("limits.maxConcurrentStreams", in: 1...1_000_000))
        set(\.grpc.http2.maxHeaderListSize, try settings("limits.maxHeaderListBytes", in: 1024...(1 << 20)))
        set(\.grpc.http2.initialWindowSize, try settings("limits.initialWindowBytes", in: 65_535...Int(Int32.max)))
        set(
            \.grpc.http2.streamWriteHighWatermark,
            try reader.integer("limits.streamWriteBufferBytes", in: 1024...(1 << 30)))
        key { () throws(ConfigurationError) in try bufferAndDeadlineLimits(reader, into: &config.grpc) }

        key { () throws(ConfigurationError) in
            if let v = try reader.duration("connection.handshakeTimeout") {
                guard v > .zero, v <= .seconds(300) else {
                    throw ConfigurationError(
                        key: "connection.handshakeTimeout", problem: "must be more than 0 and at most 5m")
                }
                config.grpc.http2.handshakeTimeout = v
            }
        }
        set(\.grpc.http2.unauthenticatedIdleTimeout, try timer("connection.unauthenticatedIdleTimeout"))
        key { () throws(ConfigurationError) in
            if let v = try reader.duration("connection.headerBlockTimeout") {
                guard v > .zero, v <= .seconds(300) else {
                    throw ConfigurationError(
                        key: "connection.headerBlockTimeout", problem: "must be more than 0 and at most 5m")
                }
                config.grpc.http2.headerBlockTimeout = v
            }
        }
        set(\.grpc.http2.idleTimeout, try timer("connection.maxIdle"))
        set(\.grpc.http2.keepaliveTime, try timer("connection.keepaliveTime"))
        key { () throws(ConfigurationError) in
            if let v = try reader.duration("connection.keepaliveTimeout") {
                guard v > .zero else {
                    throw ConfigurationError(key: "connection.keepaliveTimeout", problem: "must be more than 0")
                }
                config.grpc.http2.keepaliveTimeout = v
            }
        }
        set(\.grpc.http2.maxConnectionAge, try timer("connection.maxAge"))
        set(\.grpc.http2.maxConnectionAgeGrace, try reader.duration("connection.maxAgeGrace"))
        set(\.grpc.http2.minClientPingInterval, try reader.duration("connection.minClientPingInterval"))
        set(\.grpc.http2.permitClientPingWithoutCalls, try reader.bool("connection.permitClientPingWithoutCalls"))
        set(\.grpc.http2.maxPingStrikes, try reader.integer("connection.maxPingStrikes", in: 0...1000))
        set(\.shutdown.drainDelay, try reader.duration("shutdown.drainDelay"))
        set(\.grpc.shutdownGrace, try reader.duration("shutdown.grace"))
        return problems
    }

    /// `limits.maxBufferedBytesPerConnection`, `maxBufferedBytes`, `maxConnections`, `maxPendingHandshakes`,
    /// `maxPendingHandshakesPerAddress`, `defaultDeadline`, `maxDeadline`, with the relations between them checked.
    private static func bufferAndDeadlineLimits(
        _ reader: ConfigurationReader, into grpc: inout GRPCServerConfiguration
    ) throws(ConfigurationError) {
        let key = "limits"
        if let v = try reader.integer("\(key).maxBufferedBytesPerConnection", in: 65_536...(1 << 34)) {
            grpc.http2.maxBufferedBytesPerConnection = v
        }
        if let v = try reader.integer("\(key).maxBufferedBytes", in: 65_536...(1 << 40)) {
            grpc.http2.maxBufferedBytes = v
        }
        if let v = try reader.integer("\(key).maxConnections", in: 0...10_000_000) { grpc.http2.maxConnections = v }
        if let v = try reader.integer("\(key).maxPendingHandshakes", in: 1...1_000_000) {
            grpc.http2.maxPendingHandshakes = v
        }
        if let v = try reader.integer("\(key).maxPendingHandshakesPerAddress", in: 0...1_000_000) {
            grpc.http2.maxPendingHandshakesPerAddress = v
        }
        let day: Duration = .seconds(86_400)
        if let v = try reader.duration("\(key).defaultDeadline") {
            guard v > .zero, v <= day else {
                throw ConfigurationError(key: "\(key).defaultDeadline", problem: "must be more than 0 and at most 24h")
            }
            grpc.defaultDeadline = v
        }
        if let v = try reader.duration("\(key).maxDeadline") {
            guard v > .zero, v <= day else {
                throw ConfigurationError(key: "\(key).maxDeadline", problem: "must be more than 0 and at most 24h")
            }
            grpc.maxDeadline = v
        }
        // A message of the largest allowed size must fit one connection's budget, or it could never complete.
        let perConnection = grpc.http2.maxBufferedBytesPerConnection
        guard perConnection >= grpc.maxReceiveMessageBytes + 5 else {
            throw ConfigurationError(
                key: "\(key).maxBufferedBytesPerConnection",
                problem: "must be at least limits.maxReceiveMessageBytes + 5 (\(grpc.maxReceiveMessageBytes + 5))")
        }
        guard grpc.http2.maxBufferedBytes >= perConnection else {
            throw ConfigurationError(
                key: "\(key).maxBufferedBytes", problem: "must be at least limits.maxBufferedBytesPerConnection")
        }
    }
}
