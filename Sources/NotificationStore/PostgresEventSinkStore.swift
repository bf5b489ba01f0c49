import Postgres

/// The outbound sinks' progress in the fleet's PostgreSQL database (`notifications.store.postgres`), with
/// `SQLiteEventSinkStore`'s semantics and tables (`event_sink_progress`, `event_sink_settled`,
/// `event_dead_letters`, made by migration 3). Every replica sees every sink's progress, so the replica that takes
/// a sink over (`FleetLeases`: one replica delivers each sink at a time) resumes where the last holder recorded.
///
/// Each call is one statement or one short transaction on the database's pool; `record` locks the sink's progress
/// row first, so two replicas recording for one sink (the old holder's last record during a takeover) are applied
/// one after the other and the watermark still never moves back. This store reads no log by position: the
/// positions it keeps are the logs' own (the outbox's, the notification log's), whose order those logs guarantee.
package final class PostgresEventSinkStore: EventSinkStore {
    private let pool: PostgresPool

    package init(_ database: PostgresDatabase) {
        pool = database.pool
    }

    /// The most bytes a dead letter's body is read back with (a larger one fails the read as damaged), as in SQLite.
    static let largestBody = SQLiteEventSinkStore.largestBody
    /// The most positions above the watermark `openSink` reads back: a sink's window holds at most 4,096 unsettled
    /// events, so more than this many settled ones above its watermark means the rows are not what a sink wrote.
    static let mostSettled = 65_536

    package func openSink(_ sink: EventSinkID, startingAfter start: Int64, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> EventSinkProgress
    {
        try await transaction("opening the sink \(sink)") { transaction throws in
            _ = try await transaction.query(
                "INSERT INTO event_sink_progress(kind, sink, through, started_at) VALUES ($1, $2, $3, $4) "
                    + "ON CONFLICT (kind, sink) DO NOTHING",
                Self.key(sink) + [.integer(max(0, start)), .integer(nowMillis)])
            let progress = try await transaction.query(
                "SELECT through FROM event_sink_progress WHERE kind = $1 AND sink = $2", Self.key(sink))
            guard let row = progress.first else {
                throw NotificationStoreFailure("event sink store: \(sink) has no progress after opening it")
            }
            let through = try Self.integer(row[0], "through")
            let settled = try await transaction.query(
                "SELECT position FROM event_sink_settled WHERE kind = $1 AND sink = $2 AND position > $3 "
                    + "ORDER BY position LIMIT $4",
                Self.key(sink) + [.integer(through), .integer(Int64(Self.mostSettled) + 1)])
            guard settled.count <= Self.mostSettled else {
                throw NotificationStoreFailure(
                    "event sink store: \(sink) has more than \(Self.mostSettled) settled positions above its "
                        + "watermark", kind: .corrupt)
            }
            var positions: Set<Int64> = []
            for row in settled { positions.insert(try Self.integer(row[0], "position")) }
            return EventSinkProgress(through: through, settled: positions)
        }
    }

    package func record(_ sink: EventSinkID, _ update: EventSinkUpdate) async throws(NotificationStoreFailure) {
        try await transaction("recording the progress of \(sink)") { transaction throws in
            let moved = try await transaction.query(
                "UPDATE event_sink_progress SET through = greatest(through, $3) WHERE kind = $1 AND sink = $2 "
                    + "RETURNING through",
                Self.key(sink) + [.integer(update.through)])
            guard let row = moved.first else {
                throw NotificationStoreFailure("event sink store: \(sink) was never opened")
            }
            let through = try Self.integer(row[0], "through")
            for letter in update.deadLetters {
                _ = try await transaction.query(
                    """
                    INSERT INTO event_dead_letters(kind, sink, position, event_id, attempts, first_attempt_at, dead_at,
                      last_error, body)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                    ON CONFLICT (kind, sink, position) DO UPDATE SET
                      event_id = excluded.event_id, attempts = excluded.attempts,
                      first_attempt_at = excluded.first_attempt_at, dead_at = excluded.dead_at,
                      last_error = excluded.last_error, body = excluded.body
                    """,
                    Self.key(sink) + [
                        .integer(letter.position), .text(Self.storable(letter.eventId)),
                        .integer(Int64(letter.attempts)), .integer(letter.firstAttemptAt), .integer(letter.deadAt),
                        .text(Self.storable(letter.lastError)), .bytes(letter.body),
                    ])
            }
            let above = update.settled.filter { $0 > through }
            if !above.isEmpty {
                _ = try await transaction.query(
                    "INSERT INTO event_sink_settled(kind, sink, position) SELECT $1, $2, unnest($3::bigint[]) "
                        + "ON CONFLICT DO NOTHING",
                    Self.key(sink) + [.untyped("{" + above.map(String.init).joined(separator: ",") + "}")])
            }
            _ = try await transaction.query(
                "DELETE FROM event_sink_settled WHERE kind = $1 AND sink = $2 AND position <= $3",
                Self.key(sink) + [.integer(through)])
        }
    }

    package func deadLetters(_ sink: EventSinkID, deadSince: Int64, after position: Int64, limit: Int)
        async throws(NotificationStoreFailure) -> [EventDeadLetter]
    {
        let rows: PostgresRows
        do {
            // A body past the bound is not sent back: its length says the row is damaged.
            rows = try await pool.query(
                """
                SELECT position, event_id, attempts, first_attempt_at, dead_at, last_error,
                  CASE WHEN octet_length(body) <= $6 THEN body END, octet_length(body)
                FROM event_dead_letters
                WHERE kind = $1 AND sink = $2 AND dead_at >= $3 AND position > $4
                ORDER BY position LIMIT $5
                """,
                Self.key(sink) + [
                    .integer(deadSince), .integer(position), .integer(Int64(max(0, limit))),
                    .integer(Int64(Self.largestBody)),
                ])
        } catch {
            throw NotificationStoreFailure(error, while: "reading the dead letters of \(sink)")
        }
        var letters: [EventDeadLetter] = []
        var damaged: Int64?
        do throws(PostgresError) {
            for row in rows {
                let position = try Self.integer(row[0], "position")
                guard let body = try row[6].data() else {
                    damaged = position
                    break
                }
                letters.append(
                    EventDeadLetter(
                        position: position, eventId: try Self.text(row[1], "event_id"),
                        attempts: Int(clamping: try Self.integer(row[2], "attempts")),
                        firstAttemptAt: try Self.integer(row[3], "first_attempt_at"),
                        deadAt: try Self.integer(row[4], "dead_at"), lastError: try Self.text(row[5], "last_error"),
                        body: body))
            }
        } catch {
            throw NotificationStoreFailure(error, while: "reading the dead letters of \(sink)")
        }
        if let damaged {
            throw NotificationStoreFailure(
                "event sink store: the dead letter at position \(damaged) of \(sink) is larger than 16 MiB",
                kind: .corrupt)
        }
        return letters
    }

    package func removeDeadLetter(_ sink: EventSinkID, position: Int64) async throws(NotificationStoreFailure) -> Bool {
        do {
            let rows = try await pool.query(
                "DELETE FROM event_dead_letters WHERE kind = $1 AND sink = $2 AND position = $3",
                Self.key(sink) + [.integer(position)])
            return (rows.affectedRows ?? 0) > 0
        } catch {
            throw NotificationStoreFailure(error, while: "removing a dead letter of \(sink)")
        }
    }

    package func deadLetterCount(_ sink: EventSinkID) async throws(NotificationStoreFailure) -> Int {
        do throws(PostgresError) {
            let rows = try await pool.query(
                "SELECT count(*) FROM event_dead_letters WHERE kind = $1 AND sink = $2", Self.key(sink))
            guard let row = rows.first else { throw PostgresError(.decoding, "count(*) returned no row") }
            return Int(clamping: try Self.integer(row[0], "count"))
        } catch {
            throw NotificationStoreFailure(error, while: "counting the dead letters of \(sink)")
        }
    }

    /// Runs `body` in a transaction; its failures as store failures (a `NotificationStoreFailure` it throws as is).
    private func transaction<T: Sendable>(
        _ doing: String, _ body: (PostgresTransaction) async throws -> T
    ) async throws(NotificationStoreFailure) -> T {
        do {
            return try await pool.transaction(body)
        } catch let failure as NotificationStoreFailure {
            throw failure
        } catch let error as PostgresError {
            throw NotificationStoreFailure(error, while: doing)
        } catch {
            throw NotificationStoreFailure("PostgreSQL \(doing): \(error)")
        }
    }

    private static func key(_ sink: EventSinkID) -> [PostgresValue?] {
        [.text(sink.kind.rawValue), .text(sink.url)]
    }

    /// A non-NULL integer cell; NULL is a damaged row (`.decoding`, so the call fails `.corrupt`).
    private static func integer(_ cell: PostgresCell, _ column: String) throws(PostgresError) -> Int64 {
        guard let value = try cell.int() else { throw PostgresError(.decoding, "column \(column) is NULL") }
        return value
    }

    /// A non-NULL text cell.
    private static func text(_ cell: PostgresCell, _ column: String) throws(PostgresError) -> String {
        guard let value = try cell.string() else { throw PostgresError(.decoding, "column \(column) is NULL") }
        return value
    }

    /// `text` without NUL characters, which a PostgreSQL `text` cannot hold (each becomes U+FFFD): an error
    /// message or id that carries one must not make the sink's record fail for ever.
    private static func storable(_ text: String) -> String {
        text.contains("\u{0}") ? String(text.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : Character($0) }) : text
    }
}
