import AppStoreDomain
import Configuration
import Dispatch
import EventLoops
import GRPC
import GatewayFoundation
import NotificationStore
import Postgres
import Services
import Simulator
import SubscriptionState
import TestSupport
import Testing

@testable import GatewayApp

/// The composition root on a PostgreSQL store: a start publishes the configured policies for the analysts' view
/// (`StoreBackend.publishPolicies`), and a publication that fails fails the start.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct GatewayAppPostgresTests {
    /// The simulator's configuration on a new database of the shared test server: its first app's two premium
    /// products unlock `premium`, and refunds last until the period's end.
    static func configuration() async throws -> (GatewayConfiguration, SimulatorServer, String) {
        let (base, simulator) = try GatewayAppTests.configuration()
        var configuration = base
        let uri = try await PostgresProcess.shared().makeDatabase()
        var settings = PostgresDatabase.Settings(uri: uri)
        settings.poolSize = 1
        configuration.notifications.store.postgres = settings
        configuration.grpc.threads = 1
        let bundle = configuration.apps[0].bundleId
        configuration.apps[0].entitlements = ["premium": [bundle + ".premium.monthly", bundle + ".premium.yearly"]]
        configuration.subscriptions.refundPolicy = .untilExpiry
        return (configuration, simulator, uri)
    }

    @Test func aStartPublishesTheConfiguredPolicies() async throws {
        let (configuration, simulator, uri) = try await Self.configuration()
        defer { simulator.stop() }
        try await Self.onThread {
            let app = try GatewayApp(configuration)
            try app.start()
            app.stop()
        }
        // Every configured app's bundle id, each with the one refund policy; the mapping of the app that has one.
        let bundle = configuration.apps[0].bundleId
        let policies = try await Self.query(
            uri, "SELECT bundle_id || ' ' || refund_policy FROM subscription_policies ORDER BY bundle_id")
        #expect(policies == Set(configuration.apps.map(\.bundleId)).sorted().map { $0 + " untilExpiry" })
        let products = try await Self.query(
            uri,
            "SELECT bundle_id || ' ' || product_id || ' ' || entitlement FROM subscription_entitlement_products "
                + "ORDER BY product_id")
        #expect(
            products == ["\(bundle) \(bundle).premium.monthly premium", "\(bundle) \(bundle).premium.yearly premium"])
    }

    @Test func aPublicationThatFailsFailsTheStart() async throws {
        let (configuration, simulator, uri) = try await Self.configuration()
        defer { simulator.stop() }
        let failure = try await Self.onThread { () throws -> GatewayStartError? in
            let app = try GatewayApp(configuration)
            // Migrated by the build; the table the publication writes is gone before the start.
            _ = BlockingTask.wait { try? await Self.query(uri, "DROP TABLE subscription_entitlement_products CASCADE") }
            defer { app.stop() }
            do throws(GatewayStartError) {
                try app.start()
                return nil
            } catch {
                #expect(app.grpcPort == nil, "nothing serves")
                return error
            }
        }
        #expect(failure?.problems.first?.key == "notifications.store.postgres")
        #expect(failure?.description.contains("publishing the subscription policies") == true)
    }

    /// Runs `body` on a thread of its own: the gateway's build and start block their thread on store calls
    /// (`BlockingTask`), which a concurrency thread must not do.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The first column of `sql`'s rows, as text, on a connection of its own.
    static func query(_ uri: String, _ sql: String) async throws -> [String] {
        let loop = try EventLoop(index: 0)
        let thread = spawnThread(name: "gateway-app-pg-test") { loop.run() }
        defer {
            loop.stop()
            thread.join()
        }
        let connection = try await PostgresConnection.connect(try PostgresConfiguration(uri), on: loop)
        do {
            let rows = try await connection.query(sql)
            await connection.close()
            return try rows.map { try $0[0].string() ?? "" }
        } catch {
            await connection.close()
            throw error
        }
    }
}
