import ArgumentParser
internal import CLinux
import CallerAuthentication
import Foundation
import GRPC
import GatewayCore
import HTTP2
import Logging
import Observability
import ProtoCodec
import Services
import Simulator

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

    @Flag(name: .long, help: "Start the built-in App Store simulator on a loopback port and use it as Apple.")
    var simulator = false

    @Option(name: .long, help: "With --simulator: where its state is kept (default: a fresh temporary directory).")
    var stateDir: String?

    func validate() throws {
        if simulator && config != nil {
            throw ValidationError("--simulator writes its own configuration; do not combine it with --config")
        }
        if stateDir != nil && !simulator {
            throw ValidationError("--state-dir only applies with --simulator")
        }
    }

    func run() throws {
        // Shutdown signals go to the main thread only: block them before any other thread starts.
        _ = clinux_block_signals()
        // Connections are bounded by limits.maxConnections, not by a distribution's default soft limit.
        raiseFileDescriptorLimit()

        var simulatorServer: SimulatorServer?
        var configPath = config
        if simulator {
            let directory =
                stateDir
                ?? FileManager.default.temporaryDirectory
                .appendingPathComponent("appstore-simulator-\(getpid())").path
            let state = try SimulatorState.openOrCreate(directory: directory)
            let server = try SimulatorServer(state: state, listen: ListenAddress(host: "127.0.0.1", port: 0))
            configPath = try server.writeGatewayConfiguration(gatewayListen: listen ?? "0.0.0.0:50051")
            simulatorServer = server
        }

        let configuration = try loadConfiguration(path: configPath, trustAppleRootToo: simulator)
        let level = Logger.Level(rawValue: configuration.logging.level) ?? .info
        if configuration.logging.format == "json" {
            LoggingSystem.bootstrap { label in
                JSONLogHandler(label: label, logLevel: level, metadataProvider: .traceContext)
            }
        } else {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "appstore-gateway")
        let events = PrometheusGatewayEvents(
            registry: MetricsRegistry(), logger: Logger(label: "appstore-gateway.rpc"),
            accessLog: configuration.logging.accessLog,
            accessLogWriter: configuration.logging.format == "json" ? .standardError : nil)

        let accessEvents = PrometheusAccessEvents(
            registry: events.registry, listedCallers: configuration.callers?.map(\.identity) ?? [])
        let board = HealthStatusBoard(services: [AppStoreGatewayService.name], initial: .serving)
        let gatewayService: AppStoreGatewayService
        let feed = try WebhookRuntime.feed(configuration, registry: events.registry)
        do {
            gatewayService = try GatewayComposition.service(
                configuration, events: events,
                budgetEvents: PrometheusSharedBudgetEvents(registry: events.registry), accessEvents: accessEvents,
                live: feed)
        } catch {
            throw ConfigurationLoading.fail("invalid configuration", problems: [error])
        }
        var serverConfiguration = GRPCServerConfiguration(configuration)
        serverConfiguration.events = events
        let access = try CallerAccessSetup(
            configuration: configuration, events: accessEvents, logger: logger,
            others: resumeTokenKeyRing(configuration, service: gatewayService, logger: logger))
        serverConfiguration.callGuard = access.callGuard
        serverConfiguration.tls = access.tlsContext
        let served: [GRPCService] = [HealthService(board: board), gatewayService]
        let services = served + [ReflectionService(listing: served)]
        for service in services { events.register(methods: service.methodTypes) }
        let server: GRPCServer
        do {
            server = try GRPCServer(configuration: serverConfiguration, services: services)
        } catch {
            throw ConfigurationLoading.fail("cannot listen on \(configuration.listen): \(error)")
        }
        server.start()
        access.watcher.start()
        var webhook: WebhookRuntime?
        if let feed {
            do {
                webhook = try WebhookRuntime.start(configuration, feed: feed, service: gatewayService)
            } catch {
                server.shutdown(grace: .zero)
                throw error
            }
        }
        var admin: HTTP2Server?
        if let address = configuration.admin {
            let endpoint = AdminEndpoint(
                registry: events.registry, board: board, readinessService: AppStoreGatewayService.name,
                connections: { [http2 = server.http2, hook = webhook?.server] in
                    var ports = ["grpc": http2.connectionStatistics]
                    if let hook { ports["webhook"] = hook.connectionStatistics }
                    return ports
                }, verifier: gatewayService.verifier,
                rateLimiter: gatewayService.rateLimiter,
                appNames: configuration.appNamesByBundleID)
            do {
                admin = try HTTP2Server(
                    address: address, threads: 1, configuration: AdminEndpoint.transportLimits,
                    transport: .cleartextHTTP1,
                    responder: HTTPRequestResponder(handler: endpoint), requestHandler: endpoint,
                    threadName: "admin-loop")
            } catch {
                webhook?.stop()
                server.shutdown(grace: .zero)
                throw ConfigurationLoading.fail("cannot listen on admin \(address): \(error)")
            }
            admin?.start()
        }
        logger.info(
            access.tlsContext == nil ? "serving gRPC (h2c)" : "serving gRPC (TLS)",
            metadata: [
                "address": "\(configuration.listen.host):\(server.port)",
                "threads": .stringConvertible(server.http2.eventLoops.count),
                "apps": "\(configuration.apps.map(\.name).joined(separator: ","))",
                "rate_budget": "\(configuration.redis.url.map { "shared in \($0)" } ?? "per replica")",
            ])
        // Machine-readable lines for scripts and tests that asked for port 0.
        print("appstore-gateway listening on \(configuration.listen.host):\(server.port)")
        if let admin, let address = configuration.admin {
            print("appstore-gateway admin on http://\(address.host):\(admin.port) (/metrics, /healthz, /readyz)")
        }
        if let webhook {
            print("appstore-gateway webhook on \(webhook.url) (\(webhook.storeDescription))")
        }
        if let simulatorServer {
            printSimulatorGuide(simulatorServer, configuration: configuration, port: server.port)
        }
        fflush(nil)

        let signal = clinux_wait_shutdown_signal()
        let shutdown = configuration.shutdown
        logger.info(
            "shutting down",
            metadata: [
                "signal": .stringConvertible(signal),
                "drain_delay_ms": .stringConvertible(shutdown.drainDelayMilliseconds),
                "grace_ms": .stringConvertible(shutdown.graceMilliseconds),
            ])
        // Readiness flips at once; liveness ("") stays SERVING so Kubernetes does not restart a draining pod.
        // Calls are still taken during the drain delay, while the endpoint removal propagates.
        board.set(.notServing, service: AppStoreGatewayService.name)
        if shutdown.drainDelayMilliseconds > 0 { usleep(UInt32(min(shutdown.drainDelayMilliseconds, 600_000) * 1_000)) }
        server.shutdown()
        access.watcher.stop()
        if let admin {
            admin.beginGracefulShutdown()
            admin.closeAllConnections()
            admin.stop()
        }
        webhook?.stop()
        simulatorServer?.stop()
        logger.info("stopped")
    }

    /// The resume-token key ring's file, to be re-read when it changes; without one, a warning: the random
    /// key in use makes tokens good for this process only.
    private func resumeTokenKeyRing(
        _ configuration: GatewayConfiguration, service: AppStoreGatewayService, logger: Logger
    ) -> [AccessFileWatcher.Watched] {
        let path = configuration.notifications.resumeTokenKeyFile
        guard !path.isEmpty else {
            logger.warning(
                """
                StreamNotifications resume tokens are signed with a random key of this process: they will not \
                resume a stream after a restart or on another replica
                """,
                metadata: ["hint": "set notifications.resumeTokenKeyFile to a key ring shared by every replica"])
            return []
        }
        return [
            service.resumeTokenKeys.watching(
                path: path, allowReadableFile: configuration.apple.allowReadableKeyFiles, logger: logger)
        ]
    }

    private func loadConfiguration(path: String?, trustAppleRootToo: Bool) throws -> GatewayConfiguration {
        var environment = ProcessInfo.processInfo.environment
        if let listen { environment["APPSTORE_GATEWAY_LISTEN"] = listen }
        if let threads { environment["APPSTORE_GATEWAY_THREADS"] = String(threads) }
        var yaml = ""
        if let path {
            switch ConfigurationLoading.text(of: path) {
            case .success(let text): yaml = text
            case .failure(let error): throw ConfigurationLoading.fail("invalid configuration", problems: [error])
            }
        }
        var (configuration, problems) = ConfigurationLoading.problems(
            yaml: yaml, path: path, environment: environment, loadingFiles: false)
        guard problems.isEmpty else { throw ConfigurationLoading.fail("invalid configuration", problems: problems) }
        if trustAppleRootToo {
            // The demo also verifies genuine Apple-signed data, next to the simulator's.
            configuration.verification.trustBuiltInAppleRoot = true
        }
        return configuration
    }

    private func printSimulatorGuide(_ simulator: SimulatorServer, configuration: GatewayConfiguration, port: UInt16) {
        let app = configuration.apps.first?.name ?? "example"
        print(
            """

            Using the built-in App Store simulator at \(simulator.productionURL) (no Apple credentials needed).
              app name for calls: \(app)
              sample transaction ids: \(simulator.state.path("transactions.json"))
              health:  grpcurl -plaintext -import-path proto -proto grpc/health/v1/health.proto localhost:\(port) grpc.health.v1.Health/Check
              verify:  python3 examples/python/client.py --target localhost:\(port) verify --jws-file Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws
            Stop with Ctrl-C.
            """)
    }
}

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
