import GatewayFoundation
import Postgres

/// The PostgreSQL database a fleet of gateways shares (`notifications.store.postgres`): the notification log, the
/// subscription state with its ledger and event outbox, and the sinks' progress all live in it, so every replica
/// reads and writes the same truth (docs/postgres.md, "The fleet's store").
///
/// It owns a pool of non-blocking connections on the store's own loop (made by the composition root), and one
/// more on each loop `attach(_:)` names (the gRPC loops): a call made on such a loop runs its statements on that
/// loop's pool, so a read is one round trip with no hop between threads; any other call (the projector, the
/// timer, the sinks) uses the store's loop. Every call is a statement or a short transaction, so nothing here
/// blocks a loop. Opening
/// it migrates the schema under an advisory lock (`PostgresSchema`): several replicas starting at once migrate
/// once, and a database a newer release migrated is refused.
package final class PostgresDatabase: Sendable {
    /// What opening the database needs.
    package struct Settings: Sendable, Hashable {
        /// `notifications.store.postgres`: a libpq connection URI or `key=value` list (TLS through `sslmode` and
        /// `sslrootcert`; the password in it, in `PGPASSFILE`, or in `passwordFile`). Never logged as given.
        package var uri: String
        /// `notifications.store.postgresPasswordFile`: a file holding the password ("" = the URI's, `PGPASSFILE`'s
        /// or none). Read and checked like a key file by the composition root, which sets `password`.
        package var passwordFile = ""
        /// The password read from `passwordFile` (nil: none read).
        package var password: String?
        /// `notifications.store.postgresPoolSize`: connections on the store's loop. Default 4. The server's
        /// `max_connections` must exceed replicas × pool size (docs/deploying.md).
        package var poolSize = 4
        /// How long a statement may take before it is cancelled. Default 10s.
        package var statementTimeout: Duration = .seconds(10)
        package init(uri: String) { self.uri = uri }
    }

    /// The pool on the store's own loop.
    package let home: PostgresPool
    /// The URI with its password hidden, for logs.
    package let description: String
    private let configuration: PostgresConfiguration
    private let poolSize: Int
    private let metrics: PostgresMetrics?
    /// The pools of attached loops, by loop, once connected; and every statement `prepare` named, for them.
    private let attached = Lock(Attached())

    private struct Attached {
        var pools: [ObjectIdentifier: PostgresPool] = [:]
        var prepared: [(name: String, sql: String)] = []
        var closed = false
        var connecting: [Task<Void, Never>] = []
    }

    private init(
        home: PostgresPool, configuration: PostgresConfiguration, poolSize: Int, metrics: PostgresMetrics?
    ) {
        self.home = home
        self.configuration = configuration
        self.poolSize = poolSize
        self.metrics = metrics
        self.description = "\(configuration)"
    }

    /// The pool for a statement issued now: the current loop's when it is attached and connected, else the store
    /// loop's. Ask for it per call, not once: the caller's loop decides.
    package var pool: PostgresPool {
        guard let loop = IOLoops.current else { return home }
        let key = ObjectIdentifier(loop)
        return attached.withLock { $0.pools[key] } ?? home
    }

    /// Prepares `sql` as `name` on every pool, now and on those attached later (`PostgresPool.prepare`).
    package func prepare(_ name: String, _ sql: String) async throws(PostgresError) {
        let pools = attached.withLock { state in
            state.prepared.append((name, sql))
            return Array(state.pools.values)
        }
        try await home.prepare(name, sql)
        for pool in pools { try await pool.prepare(name, sql) }
    }

    /// Gives each of `loops` a pool of its own, connected in the background (retried with the connections'
    /// backoff while the server is down, given up when the loop stops); until a loop's pool is up, its calls use
    /// the store loop's.
    package func attach(_ loops: [any IOLoop]) {
        for loop in loops {
            let task = Task { [self] in
                var failures = 0
                while !Task.isCancelled {
                    do throws(PostgresError) {
                        let pool = try await PostgresPool.connect(
                            configuration, on: loop, size: poolSize, metrics: metrics)
                        let prepared = attached.withLock { $0.prepared }
                        for statement in prepared { try? await pool.prepare(statement.name, statement.sql) }
                        let kept = attached.withLock { state in
                            guard !state.closed else { return false }
                            state.pools[ObjectIdentifier(loop)] = pool
                            return true
                        }
                        if !kept { await pool.close() }
                        return
                    } catch {
                        // The loop stopped (or the database closed): nothing will serve this pool.
                        if error.kind == .closed { return }
                        failures += 1
                        try? await Task.sleep(for: configuration.reconnect.delay(afterFailures: failures))
                    }
                }
            }
            attached.withLock { $0.connecting.append(task) }
        }
    }

    /// Connects `settings.poolSize` connections on `loop` and migrates the schema (`PostgresSchema.migrate`).
    /// Fails `.unavailable` when the server cannot be reached, and `.corrupt` when its schema is newer than this
    /// release's.
    package static func open(
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
        return PostgresDatabase(home: pool, configuration: configuration, poolSize: settings.poolSize, metrics: metrics)
    }

    /// Closes every connection (the attached loops' too, where their loop still runs).
    package func close() async {
        let (pools, connecting) = attached.withLock { state in
            state.closed = true
            let pools = Array(state.pools.values)
            state.pools = [:]
            return (pools, state.connecting)
        }
        for task in connecting { task.cancel() }
        for pool in pools { await pool.close() }
        await home.close()
    }
}

extension PostgresDatabase.Settings: CustomStringConvertible, CustomReflectable {
    /// The settings without the URI's password or the password read: safe to log (printing a configuration, `dump`).
    package var description: String {
        let target = (try? PostgresConfiguration(uri)).map { "\($0)" } ?? "an unparsable connection string"
        return "PostgreSQL \(target), pool \(poolSize), statement timeout \(statementTimeout)"
    }

    package var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension NotificationStoreFailure {
    /// The store failure for a PostgreSQL call that failed: `.corrupt` when what the server holds does not read
    /// back (a cell that does not decode, a result past its bounds), `.unavailable` otherwise (the server down,
    /// a lost connection, a deadline; a statement error too, which a later attempt may not meet).
    package init(_ error: PostgresError, while doing: String) {
        switch error.kind {
        case .decoding: self.init("PostgreSQL \(doing): \(error)", kind: .corrupt)
        case .resultTooLarge: self.init("PostgreSQL \(doing): \(error)", kind: .limitExceeded)
        default: self.init("PostgreSQL \(doing): \(error)")
        }
    }
}
