import GatewayFoundation
import Postgres

/// The PostgreSQL database a fleet of gateways shares (`notifications.store.postgres`): the notification log, the
/// subscription state with its ledger and event outbox, and the sinks' progress all live in it, so every replica
/// reads and writes the same truth (docs/postgres.md, "The fleet's store").
///
/// It owns one pool of non-blocking connections on one event loop (the store's loop, made by the composition
/// root); every call is a statement or a short transaction on that pool, so nothing here blocks a loop. Opening
/// it migrates the schema under an advisory lock (`PostgresSchema`): several replicas starting at once migrate
/// once, and a database a newer release migrated is refused.
public final class PostgresDatabase: Sendable {
    /// What opening the database needs.
    public struct Settings: Sendable, Hashable {
        /// `notifications.store.postgres`: a libpq connection URI or `key=value` list (TLS through `sslmode` and
        /// `sslrootcert`; the password in it, in `PGPASSFILE`, or in `passwordFile`). Never logged as given.
        public var uri: String
        /// `notifications.store.postgresPasswordFile`: a file holding the password ("" = the URI's, `PGPASSFILE`'s
        /// or none). Read and checked like a key file by the composition root, which sets `password`.
        public var passwordFile = ""
        /// The password read from `passwordFile` (nil: none read).
        public var password: String?
        /// `notifications.store.postgresPoolSize`: connections on the store's loop. Default 4. The server's
        /// `max_connections` must exceed replicas × pool size (docs/deploying.md).
        public var poolSize = 4
        /// How long a statement may take before it is cancelled. Default 10s.
        public var statementTimeout: Duration = .seconds(10)
        public init(uri: String) { self.uri = uri }
    }

    /// The pool every store's statements run on.
    public let pool: PostgresPool
    /// The URI with its password hidden, for logs.
    public let description: String

    private init(pool: PostgresPool, description: String) {
        self.pool = pool
        self.description = description
    }

    /// Connects `settings.poolSize` connections on `loop` and migrates the schema (`PostgresSchema.migrate`).
    /// Fails `.unavailable` when the server cannot be reached, and `.corrupt` when its schema is newer than this
    /// release's.
    public static func open(
        _ settings: Settings, on loop: any IOLoop, metrics: PostgresMetrics? = nil,
        onEvent: (@Sendable (PostgresConnectionEvent) -> Void)? = nil
    ) async throws(NotificationStoreFailure) -> PostgresDatabase {
        var configuration: PostgresConfiguration
        do {
            configuration = try PostgresConfiguration(settings.uri)
            if let password = settings.password { configuration = try configuration.with(password: password) }
        } catch {
            throw NotificationStoreFailure("the PostgreSQL connection string: \(error)", kind: .corrupt)
        }
        configuration.queryTimeout = settings.statementTimeout
        let pool: PostgresPool
        do {
            pool = try await PostgresPool.connect(
                configuration, on: loop, size: settings.poolSize, metrics: metrics, onEvent: onEvent)
        } catch {
            throw NotificationStoreFailure("cannot connect to PostgreSQL at \(configuration): \(error)")
        }
        do throws(NotificationStoreFailure) {
            try await PostgresSchema.migrate(pool)
        } catch {
            await pool.close()
            throw error
        }
        return PostgresDatabase(pool: pool, description: "\(configuration)")
    }

    /// Closes every connection.
    public func close() async { await pool.close() }
}

extension PostgresDatabase.Settings: CustomStringConvertible, CustomReflectable {
    /// The settings without the URI's password or the password read: safe to log (printing a configuration, `dump`).
    public var description: String {
        let target = (try? PostgresConfiguration(uri)).map { "\($0)" } ?? "an unparsable connection string"
        return "PostgreSQL \(target), pool \(poolSize), statement timeout \(statementTimeout)"
    }

    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension NotificationStoreFailure {
    /// The store failure for a PostgreSQL call that failed: `.corrupt` when what the server holds does not read
    /// back (a cell that does not decode, a result past its bounds), `.unavailable` otherwise (the server down,
    /// a lost connection, a deadline; a statement error too, which a later attempt may not meet).
    public init(_ error: PostgresError, while doing: String) {
        switch error.kind {
        case .decoding: self.init("PostgreSQL \(doing): \(error)", kind: .corrupt)
        case .resultTooLarge: self.init("PostgreSQL \(doing): \(error)", kind: .limitExceeded)
        default: self.init("PostgreSQL \(doing): \(error)")
        }
    }
}
