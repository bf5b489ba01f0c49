import AppStoreDomain
import ArgumentParser
internal import CLinux
import Configuration
import Foundation
import GatewayFoundation
import Simulator

/// `appstore-gateway simulator`: the App Store simulator on its own, for callers' test harnesses.
struct SimulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract:
            "Serve a fake App Store Server API (HTTPS, h2 and HTTP/1.1) and write a gateway configuration for it.",
        discussion: """
            The state directory keeps the generated PKI, In-App Purchase keys, TLS CA and data, so a restart \
            serves the same histories. It also receives gateway.yaml: run `appstore-gateway serve --config \
            DIR/gateway.yaml` to put a gateway in front of this simulator.
            """)

    @Option(name: .long, help: "HOST:PORT to serve HTTPS on (port 0 picks a free port).")
    var listen: String = "127.0.0.1:8443"

    @Option(name: .long, help: "Where the simulator keeps its state (created on first use).")
    var stateDir: String

    @Option(name: .long, help: "Seed of the generated data (first run only).")
    var seed: UInt64?

    @Option(name: .long, help: "Customers per app (first run only).")
    var customers: Int = 25

    @Option(name: .long, help: "Number of apps (first run only).")
    var apps: Int = 1

    @Option(name: .long, help: "The `listen` written into gateway.yaml.")
    var gatewayListen: String = "127.0.0.1:50051"

    @Option(
        name: .long, help: "Faults injected without a header, in the x-simulator-fault syntax (e.g. error=4290000).")
    var fault: String?

    @Option(name: .long, help: "With --fault: inject on every Nth matching request.")
    var faultEvery: Int = 1

    @Option(name: .long, help: "With --fault: only for this endpoint (its config name, e.g. getNotificationHistory).")
    var faultEndpoint: String?

    @Option(name: .long, help: "Seconds a notification-history paginationToken stays valid (default 3600).")
    var paginationTokenLifetime: Int?

    @Option(name: .long, help: "Multiplies Apple's per-second rate limits (e.g. 100 for load tests; default 1).")
    var rateLimitScale: Double?

    @Option(
        name: .long,
        help:
            "Where Request a Test Notification delivers its TEST notification (and the default url of POST /simulator/notifications)."
    )
    var webhookURL: String?

    @Option(name: .long, help: "Divides Apple's webhook retry delays (1h, 12h, 24h, 48h, 72h); default 3600.")
    var webhookTimeFactor: Double?

    func run() throws {
        guard let address = ListenAddress(parsing: listen) else {
            throw ValidationError("--listen must be HOST:PORT, got '\(listen)'")
        }
        _ = clinux_block_signals()
        let state = try SimulatorState.openOrCreate(
            directory: stateDir, seed: seed, customersPerApp: customers, appCount: apps)
        var rules: [FaultRule] = []
        if let fault {
            guard let faults = FaultHeader.parse(fault), faultEvery > 0 else {
                throw ValidationError("--fault must use the x-simulator-fault syntax and --fault-every be positive")
            }
            var endpoint: AppleEndpoint?
            if let faultEndpoint {
                guard let named = AppleEndpoint(rawValue: faultEndpoint) else {
                    throw ValidationError("--fault-endpoint: unknown endpoint '\(faultEndpoint)'")
                }
                endpoint = named
            }
            rules.append(FaultRule(endpoint: endpoint, trigger: .everyNth(faultEvery), faults: faults))
        }
        let lifetime = paginationTokenLifetime
        let scale = rateLimitScale
        let webhookURL = self.webhookURL
        let webhookTimeFactor = self.webhookTimeFactor
        let simulator = try SimulatorServer(state: state, listen: address) { configuration in
            configuration.faults = rules
            if let lifetime { configuration.paginationTokenLifetime = .seconds(lifetime) }
            if let scale { configuration.rateLimitScale = scale }
            configuration.webhookURL = webhookURL
            if let webhookTimeFactor, webhookTimeFactor > 0 { configuration.webhookTimeFactor = webhookTimeFactor }
        }
        let configPath = try simulator.writeGatewayConfiguration(gatewayListen: gatewayListen)
        print(
            """
            App Store simulator listening on \(simulator.productionURL) (sandbox: \(simulator.productionURL)/sandbox)
              TLS CA:            \(simulator.tls.caCertificatePath)
              JWS root:          \(state.path("pki/root.pem"))
              gateway config:    \(configPath)
              sample ids:        \(state.path("transactions.json"))
              lifecycles:        \(simulator.productionURL)\(AppStoreSimulator.lifecyclesPath) (GET lists, POST starts)
            Start a gateway on it: appstore-gateway serve --config \(configPath)
            """)
        fflush(nil)
        _ = clinux_wait_shutdown_signal()
        simulator.stop()
    }
}
