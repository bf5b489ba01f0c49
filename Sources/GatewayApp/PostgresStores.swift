import GatewayFoundation
import NotificationStore
import Postgres

/// The fleet's stores over one PostgreSQL database (`notifications.store.postgres`): the notification log, the
/// subscription state with its event outbox, and the sinks' progress, each a view of the same database, opened
/// together and closed together.
struct PostgresStores: Sendable {
    let database: PostgresDatabase
    let log: PostgresNotificationStore
    let states: PostgresSubscriptionStore
    let sinks: PostgresEventSinkStore

    /// Opens the database on `loop` (connected, schema migrated) and starts listening for the other replicas'
    /// writes.
    static func open(
        _ settings: PostgresDatabase.Settings, on loop: any IOLoop, metrics: PostgresMetrics
    ) async throws(NotificationStoreFailure) -> PostgresStores {
        let database = try await PostgresDatabase.open(settings, on: loop, metrics: metrics)
        let log = PostgresNotificationStore(database: database)
        await log.start()
        let states: PostgresSubscriptionStore
        do throws(NotificationStoreFailure) {
            states = try await PostgresSubscriptionStore(database)
        } catch {
            await log.close()
            await database.close()
            throw error
        }
        return PostgresStores(database: database, log: log, states: states, sinks: PostgresEventSinkStore(database))
    }

    /// Stops listening and closes every connection.
    func close() async {
        await log.close()
        await database.close()
    }
}
