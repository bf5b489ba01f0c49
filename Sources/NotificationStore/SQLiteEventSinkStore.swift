/// The outbound sinks' progress in the notification store's SQLite file (`SQLiteNotificationStore.sinks`), written
/// on the store's one writer connection: tables `event_sink_progress` (one row per sink: its low watermark),
/// `event_sink_settled` (positions above the watermark already acknowledged) and `event_dead_letters`. Created
/// when missing, never dropped: they are what each team was told.
///
/// Another process (`appstore-gateway events replay`) may open the same file and remove dead letters while the
/// gateway runs: WAL mode lets both, each write one short transaction.
package final class SQLiteEventSinkStore: EventSinkStore {
    private let connection: SQLiteConnection

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// The tables, created in the file when missing.
    static let schema = """
        CREATE TABLE IF NOT EXISTS event_sink_progress(
          kind TEXT NOT NULL,
          sink TEXT NOT NULL,
          through INTEGER NOT NULL,
          started_at INTEGER NOT NULL,
          PRIMARY KEY(kind, sink)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS event_sink_settled(
          kind TEXT NOT NULL,
          sink TEXT NOT NULL,
          position INTEGER NOT NULL,
          PRIMARY KEY(kind, sink, position)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS event_dead_letters(
          kind TEXT NOT NULL,
          sink TEXT NOT NULL,
          position INTEGER NOT NULL,
          event_id TEXT NOT NULL,
          attempts INTEGER NOT NULL,
          first_attempt_at INTEGER NOT NULL,
          dead_at INTEGER NOT NULL,
          last_error TEXT NOT NULL,
          body BLOB NOT NULL,
          PRIMARY KEY(kind, sink, position)) WITHOUT ROWID;
        """

    /// The most bytes a dead letter's body is read back with (a damaged row fails the read instead).
    static let largestBody = 16 << 20

    package func openSink(_ sink: EventSinkID, startingAfter start: Int64, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> EventSinkProgress
    {
        try await connection.run { database throws(NotificationStoreFailure) in
            try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                try database.query(
                    "INSERT INTO event_sink_progress(kind, sink, through, started_at) VALUES(?1, ?2, ?3, ?4) "
                        + "ON CONFLICT(kind, sink) DO NOTHING",
                    bind: Self.bind(sink) + [.integer(max(0, start)), .integer(nowMillis)]
                ) { _ in false }
                var through: Int64 = 0
                try database.query(
                    "SELECT through FROM event_sink_progress WHERE kind = ?1 AND sink = ?2", bind: Self.bind(sink)
                ) { row in
                    through = row.integer(0)
                    return false
                }
                var settled: Set<Int64> = []
                try database.query(
                    "SELECT position FROM event_sink_settled WHERE kind = ?1 AND sink = ?2 AND position > ?3",
                    bind: Self.bind(sink) + [.integer(through)]
                ) { row in
                    settled.insert(row.integer(0))
                    return true
                }
                return EventSinkProgress(through: through, settled: settled)
            }
        }
    }

    package func record(_ sink: EventSinkID, _ update: EventSinkUpdate) async throws(NotificationStoreFailure) {
        try await connection.run { database throws(NotificationStoreFailure) in
            try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                try database.query(
                    "UPDATE event_sink_progress SET through = max(through, ?3) WHERE kind = ?1 AND sink = ?2",
                    bind: Self.bind(sink) + [.integer(update.through)]
                ) { _ in false }
                guard database.changes == 1 else {
                    throw NotificationStoreFailure("event sink store: \(sink) was never opened")
                }
                var through = update.through
                try database.query(
                    "SELECT through FROM event_sink_progress WHERE kind = ?1 AND sink = ?2", bind: Self.bind(sink)
                ) { row in
                    through = row.integer(0)
                    return false
                }
                for letter in update.deadLetters {
                    try database.query(
                        "INSERT OR REPLACE INTO event_dead_letters(kind, sink, position, event_id, attempts, "
                            + "first_attempt_at, dead_at, last_error, body) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        bind: Self.bind(sink) + [
                            .integer(letter.position), .text(letter.eventId), .integer(Int64(letter.attempts)),
                            .integer(letter.firstAttemptAt), .integer(letter.deadAt), .text(letter.lastError),
                            .blob(letter.body),
                        ]
                    ) { _ in false }
                }
                for position in update.settled where position > through {
                    try database.query(
                        "INSERT OR IGNORE INTO event_sink_settled(kind, sink, position) VALUES(?1, ?2, ?3)",
                        bind: Self.bind(sink) + [.integer(position)]
                    ) { _ in false }
                }
                try database.query(
                    "DELETE FROM event_sink_settled WHERE kind = ?1 AND sink = ?2 AND position <= ?3",
                    bind: Self.bind(sink) + [.integer(through)]
                ) { _ in false }
            }
        }
    }

    package func deadLetters(_ sink: EventSinkID, deadSince: Int64, after position: Int64, limit: Int)
        async throws(NotificationStoreFailure) -> [EventDeadLetter]
    {
        try await connection.run { database throws(NotificationStoreFailure) in
            var letters: [EventDeadLetter] = []
            var damaged: Int64?
            try database.query(
                "SELECT position, event_id, attempts, first_attempt_at, dead_at, last_error, body "
                    + "FROM event_dead_letters WHERE kind = ?1 AND sink = ?2 AND dead_at >= ?3 AND position > ?4 "
                    + "ORDER BY position LIMIT ?5",
                bind: Self.bind(sink) + [.integer(deadSince), .integer(position), .integer(Int64(max(0, limit)))]
            ) { row throws(NotificationStoreFailure) in
                guard let body = try row.withBlob(6, limit: Self.largestBody, { Array($0) }) else {
                    damaged = row.integer(0)
                    return false
                }
                letters.append(
                    EventDeadLetter(
                        position: row.integer(0), eventId: row.text(1), attempts: Int(clamping: row.integer(2)),
                        firstAttemptAt: row.integer(3), deadAt: row.integer(4), lastError: row.text(5), body: body))
                return true
            }
            if let damaged {
                throw NotificationStoreFailure(
                    "event sink store: the dead letter at position \(damaged) of \(sink) is larger than 16 MiB",
                    kind: .corrupt)
            }
            return letters
        }
    }

    package func removeDeadLetter(_ sink: EventSinkID, position: Int64) async throws(NotificationStoreFailure) -> Bool {
        try await connection.run { database throws(NotificationStoreFailure) in
            try database.query(
                "DELETE FROM event_dead_letters WHERE kind = ?1 AND sink = ?2 AND position = ?3",
                bind: Self.bind(sink) + [.integer(position)]
            ) { _ in false }
            return database.changes > 0
        }
    }

    package func deadLetterCount(_ sink: EventSinkID) async throws(NotificationStoreFailure) -> Int {
        try await connection.run { database throws(NotificationStoreFailure) in
            var count = 0
            try database.query(
                "SELECT count(*) FROM event_dead_letters WHERE kind = ?1 AND sink = ?2", bind: Self.bind(sink)
            ) { row in
                count = Int(clamping: row.integer(0))
                return false
            }
            return count
        }
    }

    private static func bind(_ sink: EventSinkID) -> [SQLiteDatabase.Value] {
        [.text(sink.kind.rawValue), .text(sink.url)]
    }
}
