import AppStoreDomain
import Configuration
import Edge
import Foundation
import GRPC
import GatewayFoundation
import NotificationStore
import ProtoCodec
import Services
import Simulator
import Testing

@testable import GatewayApp

/// The composition root: the whole gateway started from a configuration pointing at the simulator and stopped
/// again, and a start that fails halfway stopping what it had started.
@Suite struct GatewayAppTests {
    /// A simulator's gateway configuration with every port on a free loopback port and no drain delay.
    static func configuration() throws -> (GatewayConfiguration, SimulatorServer) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("gateway-app-tests-\(UUID().uuidString)").path
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 12)
        let simulator = try SimulatorServer(state: state, listen: ListenAddress(host: "127.0.0.1", port: 0))
        let path = try simulator.writeGatewayConfiguration(gatewayListen: "127.0.0.1:0")
        var configuration = try GatewayConfiguration.load(yaml: try String(contentsOfFile: path, encoding: .utf8))
        configuration.resolvePaths(relativeTo: directory)
        configuration.admin = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.notifications.webhook.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.notifications.store.sqlitePath = directory + "/notifications.db"
        configuration.shutdown.drainDelay = .zero
        return (configuration, simulator)
    }

    @Test func startsEveryPortAndStopsThem() throws {
        let (configuration, simulator) = try Self.configuration()
        defer { simulator.stop() }
        let app = try GatewayApp(configuration)
        #expect(app.grpcPort == nil)
        try app.start()
        #expect((app.grpcPort ?? 0) > 0)
        #expect((app.adminPort ?? 0) > 0)
        #expect(app.webhookURL?.hasPrefix("http://127.0.0.1:") == true)
        #expect(app.webhookStoreDescription == "sqlite \(configuration.notifications.store.sqlitePath)")
        #expect(app.board.status(of: AppStoreGatewayService.name) == .serving)
        #expect(app.board.status(of: RetentionMessagingService.name) == .serving)
        app.stop()
        #expect(app.board.status(of: AppStoreGatewayService.name) == .notServing)
        #expect(app.board.status(of: RetentionMessagingService.name) == .notServing)
        #expect(app.grpcPort == nil)
        #expect(app.adminPort == nil)
        #expect(app.webhookURL == nil)
    }

    @Test func aPortThatCannotBeBoundStopsWhatStartedBeforeIt() throws {
        let (configuration, simulator) = try Self.configuration()
        defer { simulator.stop() }
        var unbindable = configuration
        // A documentation address (RFC 5737): no interface of this host has it.
        unbindable.admin = ListenAddress(host: "192.0.2.1", port: 0)
        let app = try GatewayApp(unbindable)
        #expect {
            try app.start()
        } throws: { error in
            (error as? GatewayStartError)?.message.hasPrefix("cannot listen on admin 192.0.2.1:0: ") == true
        }
        #expect(app.grpcPort == nil, "the gRPC server started before the admin port is shut down again")
        #expect(app.webhookURL == nil, "so is the webhook")
    }

    @Test func aBadFileStopsTheBuildWithItsKey() throws {
        let (configuration, simulator) = try Self.configuration()
        defer { simulator.stop() }
        var broken = configuration
        broken.notifications.store.sqlitePath = "/nonexistent-directory/notifications.db"
        #expect {
            _ = try GatewayApp(broken)
        } throws: { error in
            let error = error as? GatewayStartError
            return error?.message == "invalid configuration"
                && error?.problems.first?.key == "notifications.store.sqlite"
        }
    }

    @Test func stopActionsRunLastStartedFirst() {
        var stops = StopActions()
        let order = OrderLog()
        for name in ["grpc", "watcher", "webhook", "admin"] { stops.push { order.append(name) } }
        stops.unwind()
        #expect(order.names == ["admin", "webhook", "watcher", "grpc"])
        stops.unwind()
        #expect(order.names.count == 4, "each action runs once")
    }

    /// The names the stop actions recorded, in order.
    final class OrderLog {
        private(set) var names: [String] = []
        func append(_ name: String) { names.append(name) }
    }
}
