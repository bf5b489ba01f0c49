import AppStoreClient
import AppStoreDomain
import Configuration
import Edge
import GatewayFoundation
import Metrics
import NotificationStore
import Postgres
import Redis
import Services

/// The notification store `notifications.store` names, with what it keeps beside the log: SQLite (one replica; the
/// log, the subscription state and the sinks' progress in one file), Redis (several replicas; the log only), or
/// PostgreSQL (several replicas; everything, on connections of the store's own loop).
struct StoreBackend {
    let log: any NotificationStore
    /// The subscription state (nil: the store keeps none).
    let states: (any SubscriptionStore)?
    /// The sinks' progress and dead letters (nil: the store keeps none).
    let sinks: (any EventSinkStore)?
    /// For logs: "sqlite PATH", "redis stream", "postgres host=… dbname=…" (no password).
    let description: String
    /// Who does the work that must happen once (the sinks' deliveries, the projection, the timer, the
    /// reconciler): this replica alone, or the holder of each piece's lease in the PostgreSQL database.
    let fleet: FleetLease
    /// The PostgreSQL stores and their loop (nil for the others), closed by `close()`.
    private let postgres: (loop: GatewayComposition.OwnedLoop, stores: PostgresStores)?

    /// Opens the store; PostgreSQL is connected and its schema migrated before this returns (it blocks the calling
    /// thread, which is the start-up's, for at most the connection's timeouts).
    static func open(_ configuration: GatewayConfiguration, registry: MetricsRegistry) throws(GatewayStartError)
        -> StoreBackend
    {
        let settings = configuration.notifications.store
        if settings.redis, let url = configuration.redis.url {
            let store = RedisNotificationStore(
                url: url, tls: RedisTLSFiles(configuration.redis), keyPrefix: configuration.redis.keyPrefix,
                timeout: max(.seconds(1), configuration.redis.timeout),
                retention: settings.retention,
                largestPayload: configuration.notifications.webhook.maxBodyBytes)
            return StoreBackend(
                log: store, states: nil, sinks: nil, description: "redis stream", fleet: .soleReplica, postgres: nil)
        }
        if var postgres = settings.postgres {
            if !postgres.passwordFile.isEmpty {
                do throws(ConfigurationError) {
                    postgres.password = try PostgresPasswordFile.load(
                        postgres.passwordFile, allowReadableFile: configuration.apple.allowReadableKeyFiles)
                } catch {
                    throw .invalidConfiguration(error)
                }
            }
            return try openPostgres(postgres, registry: registry)
        }
        do {
            let sqlite = try SQLiteNotificationStore(path: settings.sqlitePath)
            return StoreBackend(
                log: sqlite, states: sqlite.subscriptions, sinks: sqlite.sinks,
                description: "sqlite \(settings.sqlitePath)", fleet: .soleReplica, postgres: nil)
        } catch {
            throw .invalidConfiguration(ConfigurationError(key: "notifications.store.sqlite", problem: "\(error)"))
        }
    }

    private static func openPostgres(_ settings: PostgresDatabase.Settings, registry: MetricsRegistry)
        throws(GatewayStartError) -> StoreBackend
    {
        let loop = try GatewayComposition.OwnedLoop(threadName: "store-pg")
        loop.start()
        let metrics = PostgresMetrics(registry: registry)
        let opened = BlockingTask.wait { [loop] () -> Result<PostgresStores, NotificationStoreFailure> in
            do throws(NotificationStoreFailure) {
                return .success(try await PostgresStores.open(settings, on: loop.loop, metrics: metrics))
            } catch {
                return .failure(error)
            }
        }
        switch opened {
        case .success(let stores):
            return StoreBackend(
                log: stores.log, states: stores.states, sinks: stores.sinks,
                description: "postgres \(stores.database.description)",
                fleet: FleetLease(leases: PostgresFleetLeases(stores.database)), postgres: (loop, stores))
        case .failure(let failure):
            loop.stop()
            throw .invalidConfiguration(ConfigurationError(key: "notifications.store.postgres", problem: "\(failure)"))
        }
    }

    /// Publishes each configured app's subscription policy (`subscriptions.refundPolicy` and `apps[].entitlements`)
    /// to the PostgreSQL database by bundle id, for the analysts' view (the first app wins a bundle id listed twice,
    /// as it does for the state); nothing for the other stores, whose views know no policy. Blocks the calling
    /// thread like `open`; a failure fails the start as the store's opening does.
    func publishPolicies(_ configuration: GatewayConfiguration) throws(GatewayStartError) {
        guard let states = postgres?.stores.states else { return }
        let policies = Dictionary(
            configuration.apps.map { ($0.bundleId, configuration.subscriptions.policy(for: $0)) },
            uniquingKeysWith: { first, _ in first })
        let failure = BlockingTask.wait { () -> NotificationStoreFailure? in
            do throws(NotificationStoreFailure) {
                try await states.publish(policies: policies)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            throw .invalidConfiguration(ConfigurationError(key: "notifications.store.postgres", problem: "\(failure)"))
        }
    }

    /// Gives each of `loops` (the gRPC loops) PostgreSQL connections of its own, so their reads run where their
    /// calls do (nothing for the other stores).
    func attach(_ loops: [any IOLoop]) {
        postgres?.stores.database.attach(loops)
    }

    /// Closes the PostgreSQL connections and stops their loop (nothing for the other stores); call once nothing
    /// uses the store.
    func close() {
        guard let postgres else { return }
        let stores = postgres.stores
        BlockingTask.wait { await stores.close() }
        postgres.loop.stop()
    }
}
