import ArgumentParser
import Foundation
import GRPC
import GatewayCore
import HTTP2
import Logging
import ProtoCodec
import Services
internal import CLinux

/// `appstore-gateway serve`: runs the gRPC gateway until SIGTERM or SIGINT.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve the gateway's gRPC API (h2c).")

    @Option(name: .long, help: "The YAML configuration file; without it the built-in defaults are used.")
    var config: String?

    @Option(name: .long, help: "Overrides `listen`: HOST:PORT to serve gRPC on (port 0 picks a free port).")
    var listen: String?

    @Option(name: .long, help: "Overrides `threads`: event loops (0 = one per core).")
    var threads: Int?

    func run() throws {
        let configuration: GatewayConfiguration
        do {
            configuration = try loadConfiguration()
        } catch let error as ConfigurationError {
            throw ValidationError("invalid configuration: \(error)")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: configuration.logging.level) ?? .info
            return handler
        }
        let logger = Logger(label: "appstore-gateway")

        // Shutdown signals go to the main thread only: block them before any other thread starts.
        _ = clinux_block_signals()

        let board = HealthStatusBoard(services: [AppStoreGatewayService.name], initial: .serving)
        var grpcConfiguration = GRPCServerConfiguration()
        grpcConfiguration.listen = configuration.listen
        grpcConfiguration.threads = configuration.threads
        grpcConfiguration.maxReceiveMessageBytes = configuration.limits.maxReceiveMessageBytes
        grpcConfiguration.shutdownGraceMilliseconds = configuration.shutdown.graceMilliseconds
        grpcConfiguration.http2.maxConcurrentStreams = UInt32(configuration.limits.maxConcurrentStreams)
        grpcConfiguration.http2.maxHeaderListSize = UInt32(configuration.limits.maxHeaderListBytes)
        grpcConfiguration.http2.initialWindowSize = UInt32(configuration.limits.initialWindowBytes)
        grpcConfiguration.http2.streamWriteHighWatermark = configuration.limits.streamWriteBufferBytes
        grpcConfiguration.http2.idleTimeoutMilliseconds = configuration.connection.maxIdleMilliseconds
        grpcConfiguration.http2.keepaliveTimeMilliseconds = configuration.connection.keepaliveTimeMilliseconds
        grpcConfiguration.http2.keepaliveTimeoutMilliseconds = configuration.connection.keepaliveTimeoutMilliseconds

        let gatewayService: AppStoreGatewayService
        do {
            gatewayService = try AppStoreGatewayService(configuration: configuration)
        } catch {
            throw ValidationError("invalid configuration: \(error)")
        }
        let server: GRPCServer
        do {
            server = try GRPCServer(
                configuration: grpcConfiguration,
                services: [HealthService(board: board), gatewayService])
        } catch {
            throw ValidationError("cannot listen on \(configuration.listen): \(error)")
        }
        server.start()
        logger.info("serving gRPC (h2c)", metadata: [
            "address": "\(configuration.listen.host):\(server.port)",
            "threads": "\(server.http2.eventLoops.count)",
        ])
        // A machine-readable line for scripts and tests that asked for port 0.
        print("appstore-gateway listening on \(configuration.listen.host):\(server.port)")
        fflush(nil)

        let signal = clinux_wait_shutdown_signal()
        logger.info("shutting down", metadata: ["signal": "\(signal)", "grace_ms": "\(configuration.shutdown.graceMilliseconds)"])
        board.set(.notServing)
        server.shutdown()
        logger.info("stopped")
    }

    private func loadConfiguration() throws -> GatewayConfiguration {
        var environment = ProcessInfo.processInfo.environment
        if let listen { environment["APPSTORE_GATEWAY_LISTEN"] = listen }
        if let threads { environment["APPSTORE_GATEWAY_THREADS"] = String(threads) }
        var yaml = ""
        if let config {
            guard let text = try? String(contentsOfFile: config, encoding: .utf8) else {
                throw ValidationError("cannot read the configuration file '\(config)'")
            }
            yaml = text
        }
        return try GatewayConfiguration.load(yaml: yaml, environment: environment)
    }
}
