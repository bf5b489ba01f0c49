import AppStoreDomain
import ArgumentParser
internal import CLinux
import CallerAuthentication
import Configuration
import Foundation
import GRPC
import GatewayApp
import GatewayFoundation
import HTTPServer
import Logging
import Observability
import SignedData
import Simulator
import Tracing

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

    @Flag(
        name: .long,
        help: """
            Keep the core file size limit the process was started with. Without it the limit is set to 0 before \
            any key is read: a core dump would hold the apps' private keys, the TLS and Redis keys.
            """)
    var allowCoreDumps = false

    func validate() throws {
        if simulator && config != nil {
            throw ValidationError("--simulator writes its own configuration; do not combine it with --config")
        }
        if stateDir != nil && !simulator {
            throw ValidationError("--state-dir only applies with --simulator")
        }
    }

    func run() throws {
        // No core file of this process, which will hold keys, unless asked for; before anything reads one.
        var coreDumps: String?
        if allowCoreDumps {
            coreDumps = "core dumps are allowed (--allow-core-dumps): a core file would hold the keys in memory"
        } else if clinux_disable_core_dumps() != 0 {
            coreDumps =
                "cannot turn core dumps off (errno \(clinux_errno())): a core file would hold the keys in memory"
        }
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
        bootstrapLogging(configuration.logging)
        let logger = Logger(label: "appstore-gateway")
        if let coreDumps { logger.warning("\(coreDumps)") }
        let app: GatewayApp
        do {
            app = try GatewayApp(configuration, configurationFile: configPath, logger: logger)
            try app.start()
        } catch {
            throw ConfigurationLoading.fail(error.message, problems: error.problems)
        }
        // Machine-readable lines for scripts and tests that asked for port 0.
        let port = app.grpcPort ?? 0
        print("appstore-gateway listening on \(configuration.grpc.listen.host):\(port)")
        if let adminPort = app.adminPort, let address = configuration.admin {
            print("appstore-gateway admin on http://\(address.host):\(adminPort) (/metrics, /healthz, /readyz)")
        }
        if let url = app.webhookURL, let store = app.webhookStoreDescription {
            print("appstore-gateway webhook on \(url) (\(store))")
        }
        // The built-in simulator's lifecycles notify this gateway's webhook unless a start names another.
        simulatorServer?.simulator.deliverLifecycles(to: app.webhookURL.flatMap(URL.init(string:)))
        if let url = configuration.tracing.tracesURL {
            logger.info(
                "exporting traces",
                metadata: [
                    "url": "\(url)", "service_name": "\(configuration.tracing.effectiveServiceName)",
                    "sampler": "\(configuration.tracing.sampler.rawValue)",
                ])
        }
        if let simulatorServer {
            printSimulatorGuide(simulatorServer, configuration: configuration, port: port)
        }
        fflush(nil)

        let signal = clinux_wait_shutdown_signal()
        logger.info(
            "shutting down",
            metadata: [
                "signal": .stringConvertible(signal),
                "drain_delay_ms": .stringConvertible(configuration.shutdown.drainDelay.wholeMilliseconds),
                "grace_ms": .stringConvertible(configuration.grpc.shutdownGrace.wholeMilliseconds),
            ])
        app.stop()
        simulatorServer?.stop()
        logger.info("stopped")
    }

    /// Log lines as `logging.format` and `logging.level` ask, for every logger made from here on.
    private func bootstrapLogging(_ logging: GatewayConfiguration.Logging) {
        let level = Logger.Level(rawValue: logging.level) ?? .info
        if logging.format == "json" {
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
    }

    private func loadConfiguration(path: String?, trustAppleRootToo: Bool) throws -> GatewayConfiguration {
        var environment = ProcessInfo.processInfo.environment
        if let listen { environment["APPSTORE_GATEWAY_LISTEN"] = listen }
        if let threads { environment["APPSTORE_GATEWAY_THREADS"] = String(threads) }
        var configuration = try ConfigurationLoading.load(path: path, environment: environment)
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
              subscription lifecycles: \(simulator.productionURL)\(AppStoreSimulator.lifecyclesPath) (GET lists, POST starts)
              health:  grpcurl -plaintext -import-path proto -proto grpc/health/v1/health.proto localhost:\(port) grpc.health.v1.Health/Check
              verify:  python3 examples/python/client.py --target localhost:\(port) verify --jws-file Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws
            Stop with Ctrl-C.
            """)
    }
}
