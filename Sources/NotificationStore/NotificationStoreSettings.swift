/// Where received notifications are kept (keys under `notifications.store`).
package struct NotificationStoreSettings: Sendable, Hashable {
    /// `notifications.store.sqlite`: the SQLite file. Default "/var/lib/appstore-gateway/notifications.db".
    package var sqlitePath = "/var/lib/appstore-gateway/notifications.db"
    /// `notifications.store.redis`: keep them in a Redis stream at `redis.url` instead, shared by replicas.
    package var redis = false
    /// `notifications.store.postgres` (with `postgresPasswordFile`, `postgresPoolSize`): keep the notification log,
    /// the subscription state and its events, and the sinks' progress in this PostgreSQL database instead, shared
    /// by every replica. nil = not used.
    package var postgres: PostgresDatabase.Settings?
    /// `notifications.store.retention`: how long a notification is kept after it arrived; one signed longer
    /// ago than this is not stored at all. Default 30d.
    package var retention: Duration = .seconds(30 * 86_400)
    /// `notifications.store.reconcileInterval`: how often Apple's recent history is compared with the
    /// store and what the store misses is backfilled, and the store pruned. Default 10m; 0 (nil) turns the
    /// comparison off (pruning then runs every 10m).
    package var reconcileInterval: Duration? = .seconds(600)
    /// `notifications.store.reconcileWindow`: how far back each comparison looks. Default 6h.
    package var reconcileWindow: Duration = .seconds(6 * 3_600)
    package init() {}
}
