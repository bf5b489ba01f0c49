import Postgres

/// One step of the PostgreSQL schema: statements run in order, in the migration's transaction.
struct PostgresMigration: Sendable {
    /// Its place in `PostgresSchema.migrations` (1, 2, …); recorded in `gateway_schema` once applied.
    let version: Int64
    /// What it makes, for `gateway_schema` and logs.
    let name: String
    /// One statement each (the extended protocol runs one statement per call).
    let statements: [String]
}

/// The fleet database's schema: versioned migrations applied in order at start, each recorded in
/// `gateway_schema`, all under one transaction-scoped advisory lock, so replicas starting together migrate once and
/// a replica never sees half a migration. A database whose newest version this release does not know (a newer
/// release migrated it) is refused rather than used: the older code would not know its tables' rules.
///
/// Unlike the SQLite file's state tables (dropped and replayed on a change), a fleet's database is migrated in place:
/// a migration never drops what an older one made unless it says how the rows move.
enum PostgresSchema {
    /// The advisory lock every replica takes to migrate ("appstore-gateway schema", an arbitrary constant).
    static let lockKey: Int64 = 0x6170_7073_6368_656D

    /// Every migration, oldest first; versions 1, 2, … without gaps.
    static let migrations: [PostgresMigration] = [
        notificationLog, subscriptionState, eventSinks, largeValues, entitlements,
    ]

    /// The newest version this release knows.
    static var latestVersion: Int64 { migrations.last?.version ?? 0 }

    /// Applies the migrations `pool`'s database lacks, in one transaction under the advisory lock; throws
    /// `.corrupt` when the database is newer than this release, `.unavailable` when the server fails.
    static func migrate(_ pool: PostgresPool) async throws(NotificationStoreFailure) {
        do {
            try await pool.transaction { transaction in
                _ = try await transaction.query("SELECT pg_advisory_xact_lock($1)", [.integer(lockKey)])
                _ = try await transaction.query(
                    """
                    CREATE TABLE IF NOT EXISTS gateway_schema(
                      version bigint PRIMARY KEY,
                      name text NOT NULL,
                      applied_at timestamptz NOT NULL DEFAULT now())
                    """)
                let rows = try await transaction.query("SELECT coalesce(max(version), 0) FROM gateway_schema")
                let current = try rows.first?[0].int() ?? 0
                if current > latestVersion {
                    throw NotificationStoreFailure(
                        "the PostgreSQL database has schema version \(current), newer than this release's "
                            + "\(latestVersion): run the release that migrated it (or newer)", kind: .corrupt)
                }
                for migration in migrations where migration.version > current {
                    for statement in migration.statements { _ = try await transaction.query(statement) }
                    _ = try await transaction.query(
                        "INSERT INTO gateway_schema(version, name) VALUES ($1, $2)",
                        [.integer(migration.version), .text(migration.name)])
                }
            }
        } catch let failure as NotificationStoreFailure {
            throw failure
        } catch let error as PostgresError {
            throw NotificationStoreFailure(error, while: "migrating the schema")
        } catch {
            throw NotificationStoreFailure("PostgreSQL migrating the schema: \(error)")
        }
    }
}
