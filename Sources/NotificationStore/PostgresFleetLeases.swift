import GatewayFoundation
import Postgres

/// The fleet's leases in the shared PostgreSQL database (`fleet_leases`: one row per lease, its holder and when it
/// expires). `hold` is one statement: an insert that, on conflict, takes the row over only when its lease has
/// expired or is the caller's own, so two replicas asking at once are serialized by the row's lock and exactly
/// one gets it. Expiry is on the server's clock (`now()`), the one clock every replica shares: a replica whose
/// clock is off neither steals a live lease nor keeps a dead one.
///
/// A table rather than session advisory locks: an advisory lock belongs to a connection, and when the connection
/// breaks and the client reconnects (docs/postgres.md, "Reconnects") the lock is gone without a word to its
/// holder, who would keep working beside the replica that took it. A row with an expiry survives reconnects, and
/// a holder knows it still holds the lease only when a renewal says so.
package final class PostgresFleetLeases: FleetLeases {
    private let pool: PostgresPool

    package init(_ database: PostgresDatabase) {
        pool = database.pool
    }

    package var isShared: Bool { true }

    package func hold(_ name: String, holder: String, for ttl: Duration) async throws(NotificationStoreFailure)
        -> Bool
    {
        let rows: PostgresRows
        do {
            rows = try await pool.query(
                """
                INSERT INTO fleet_leases AS lease(name, holder, expires_at, acquired_at)
                VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond', now())
                ON CONFLICT (name) DO UPDATE SET
                  holder = excluded.holder,
                  expires_at = excluded.expires_at,
                  acquired_at = CASE WHEN lease.holder = excluded.holder THEN lease.acquired_at
                                ELSE excluded.acquired_at END
                WHERE lease.holder = excluded.holder OR lease.expires_at <= now()
                RETURNING holder
                """,
                [.text(name), .text(holder), .integer(max(1, ttl.wholeMilliseconds))])
        } catch {
            throw NotificationStoreFailure(error, while: "holding the lease \(name)")
        }
        return !rows.isEmpty
    }

    package func release(_ name: String, holder: String) async throws(NotificationStoreFailure) {
        do {
            _ = try await pool.query(
                "DELETE FROM fleet_leases WHERE name = $1 AND holder = $2", [.text(name), .text(holder)])
        } catch {
            throw NotificationStoreFailure(error, while: "releasing the lease \(name)")
        }
    }
}
