import GatewayFoundation

/// The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so a commit is on disk (the
/// write-ahead log fsynced) before `insert` returns, and a `kill -9` or power cut after the webhook's 200
/// loses nothing. Every statement runs on one serial queue (its own thread), never on an event loop.
package final class SQLiteNotificationStore: NotificationStore {
    /// The one writing connection of the file, shared with `subscriptions`.
    private let connection: SQLiteConnection
    package let signal = LiveSignal()
    package var isShared: Bool { false }
    /// The subscription state kept in the same file: its writes run on this store's connection and queue, one
    /// writer for the notifications and the state.
    package let subscriptions: SQLiteSubscriptionStore
    /// The outbound sinks' progress and dead letters, in the same file, written on this store's connection.
    package let sinks: SQLiteEventSinkStore

    static let schema = """
        CREATE TABLE IF NOT EXISTS notifications(
          position INTEGER PRIMARY KEY AUTOINCREMENT,
          uuid TEXT NOT NULL UNIQUE,
          signed_date INTEGER NOT NULL,
          received_at INTEGER NOT NULL,
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          notification_type TEXT NOT NULL,
          subtype TEXT NOT NULL,
          signed_payload TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS notifications_window ON notifications(bundle_id, signed_date, position);
        CREATE INDEX IF NOT EXISTS notifications_received ON notifications(received_at);
        """

    /// Opens or creates the store at `path` (its directory must exist), with the subscription state's tables
    /// (`subscriptions`; their limits `limits`).
    package init(path: String, limits: SubscriptionStoreLimits = .defaults) throws(NotificationStoreFailure) {
        let database = try SQLiteDatabase(path: path)
        let mode = try database.text("PRAGMA journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw NotificationStoreFailure("the SQLite store '\(path)' cannot use WAL mode (got \(mode ?? "nothing"))")
        }
        try database.execute("PRAGMA synchronous=FULL")
        try database.execute(Self.schema)
        try SQLiteSubscriptionSchema.prepare(database)
        try database.execute(SQLiteEventSinkStore.schema)
        connection = SQLiteConnection(database, label: "appstore-gateway.notification-store")
        subscriptions = try SQLiteSubscriptionStore(writer: connection, path: path, limits: limits)
        sinks = SQLiteEventSinkStore(connection: connection)
    }

    private func run<Value: Sendable>(
        _ work: @escaping @Sendable (SQLiteDatabase) throws(NotificationStoreFailure) -> Value
    )
        async throws(NotificationStoreFailure) -> Value
    {
        try await connection.run(work)
    }

    /// Stores `notification` durably. Inserts that arrive while one commit is under way are committed together
    /// in the next transaction (group commit): each caller still returns only once its own row is on disk, and
    /// the store's one writer pays one fsync per group rather than one per notification. A failure of the
    /// group's transaction fails every insert of it (nothing of it was kept).
    package func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    {
        let result: Result<InsertOutcome, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            let first = pending.withLock { group -> Bool in
                group.inserts.append(
                    PendingInsert(notification: notification, receivedAt: receivedAt, done: continuation))
                defer { group.scheduled = true }
                return !group.scheduled
            }
            if first { commitPending() }
        }
        return try result.get()
    }

    /// One insert waiting for its group's commit.
    private struct PendingInsert: Sendable {
        var notification: NewNotification
        var receivedAt: Int64
        var done: CheckedContinuation<Result<InsertOutcome, NotificationStoreFailure>, Never>
    }

    private struct PendingGroup: Sendable {
        var inserts: [PendingInsert] = []
        /// Whether a commit is queued on the writer (it takes every insert pending when it runs).
        var scheduled = false
    }

    private let pending = Lock(PendingGroup())

    /// Queues one commit of every pending insert on the writer; another is queued after it when more arrived
    /// meanwhile, so the state's writes, queued on the same writer, interleave with the groups.
    private func commitPending() {
        connection.submit { [self] database in
            let group = pending.withLock { group -> [PendingInsert] in
                defer { group.inserts.removeAll(keepingCapacity: true) }
                return group.inserts
            }
            let outcomes: Result<[InsertOutcome], NotificationStoreFailure>
            do throws(NotificationStoreFailure) {
                outcomes = .success(
                    try database.inTransaction(.write) { () throws(NotificationStoreFailure) -> [InsertOutcome] in
                        var outcomes: [InsertOutcome] = []
                        outcomes.reserveCapacity(group.count)
                        for insert in group {
                            outcomes.append(
                                try Self.insert(insert.notification, receivedAt: insert.receivedAt, into: database))
                        }
                        return outcomes
                    })
            } catch {
                outcomes = .failure(error)
            }
            let more = pending.withLock { group -> Bool in
                group.scheduled = !group.inserts.isEmpty
                return group.scheduled
            }
            if more { commitPending() }
            switch outcomes {
            case .success(let outcomes):
                if outcomes.contains(where: { if case .stored = $0 { true } else { false } }) { signal.raise() }
                for (insert, outcome) in zip(group, outcomes) { insert.done.resume(returning: .success(outcome)) }
            case .failure(let failure):
                for insert in group { insert.done.resume(returning: .failure(failure)) }
            }
        }
    }

    /// One row, inside the group's transaction: stored, or a duplicate of the row with its UUID.
    private static func insert(_ notification: NewNotification, receivedAt: Int64, into database: SQLiteDatabase)
        throws(NotificationStoreFailure) -> InsertOutcome
    {
        try database.query(
            """
            INSERT INTO notifications(uuid, signed_date, received_at, bundle_id, environment, notification_type,
              subtype, signed_payload) VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(uuid) DO NOTHING
            """,
            bind: [
                .text(notification.uuid), .integer(notification.signedDate), .integer(receivedAt),
                .text(notification.bundleId), .text(notification.environment), .text(notification.notificationType),
                .text(notification.subtype), .text(notification.signedPayload),
            ]
        ) { _ in false }
        let inserted = database.changes > 0
        var position: Int64 = 0
        try database.query("SELECT position FROM notifications WHERE uuid = ?", bind: [.text(notification.uuid)]) {
            position = $0.integer(0)
            return false
        }
        let at = StorePosition(major: UInt64(clamping: position))
        return inserted ? .stored(at) : .duplicate(at)
    }

    static let columns =
        "position, received_at, uuid, signed_date, bundle_id, environment, notification_type, subtype, signed_payload"

    static func entry(_ row: SQLiteDatabase.Row) -> StoredNotification {
        StoredNotification(
            position: StorePosition(major: UInt64(clamping: row.integer(0))), receivedAt: row.integer(1),
            notification: NewNotification(
                uuid: row.text(2), signedDate: row.integer(3), bundleId: row.text(4), environment: row.text(5),
                notificationType: row.text(6), subtype: row.text(7), signedPayload: row.text(8)))
    }

    /// The filter's optional columns as SQL (an unset filter matches every value).
    static let optionalFilters = """
        AND (?1 = '' OR environment = ?1) AND (?2 = '' OR notification_type = ?2) AND (?3 = '' OR subtype = ?3)
        """

    static func filterValues(_ filter: StoreFilter) -> [SQLiteDatabase.Value] {
        [
            .text(filter.environment ?? ""), .text(filter.notificationType ?? ""), .text(filter.subtype ?? ""),
            .text(filter.bundleId),
        ]
    }

    package func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure) -> StorePage
    {
        try await run { database throws(NotificationStoreFailure) in
            var found: [StoredNotification] = []
            try database.query(
                "SELECT \(Self.columns) FROM notifications WHERE bundle_id = ?4 AND position > ?5 \(Self.optionalFilters) "
                    + "ORDER BY position LIMIT ?6",
                bind: Self.filterValues(filter) + [
                    .integer(Int64(clamping: position.major)), .integer(Int64(max(1, limit))),
                ]
            ) {
                found.append(Self.entry($0))
                return true
            }
            return StorePage(entries: found, through: found.last?.position ?? position)
        }
    }

    package func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure)
        -> StorePage
    {
        try await run { database throws(NotificationStoreFailure) in
            var found: [StoredNotification] = []
            try database.query(
                "SELECT \(Self.columns) FROM notifications WHERE position > ?1 ORDER BY position LIMIT ?2",
                bind: [.integer(Int64(clamping: position.major)), .integer(Int64(max(1, limit)))]
            ) {
                found.append(Self.entry($0))
                return true
            }
            return StorePage(entries: found, through: found.last?.position ?? position)
        }
    }

    package func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    {
        try await run { database throws(NotificationStoreFailure) in
            var found: [StoredNotification] = []
            let afterDate = key?.signedDate ?? Int64.min
            let afterPosition = Int64(clamping: key?.position.major ?? 0)
            try database.query(
                "SELECT \(Self.columns) FROM notifications WHERE bundle_id = ?4 AND position <= ?5 "
                    + "AND signed_date >= ?6 AND signed_date < ?7 AND (signed_date > ?8 OR (signed_date = ?8 AND position > ?9)) "
                    + "\(Self.optionalFilters) ORDER BY signed_date, position LIMIT ?10",
                bind: Self.filterValues(filter) + [
                    .integer(Int64(clamping: through.major)), .integer(filter.start), .integer(filter.end),
                    .integer(afterDate), .integer(afterPosition), .integer(Int64(max(1, limit))),
                ]
            ) {
                found.append(Self.entry($0))
                return true
            }
            return found
        }
    }

    package func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition] {
        var found: [String: StorePosition] = [:]
        for start in stride(from: 0, to: uuids.count, by: NotificationStoreLimits.lookupBatch) {
            let chunk = Array(uuids[start..<min(uuids.count, start + NotificationStoreLimits.lookupBatch)])
            let part = try await run { database throws(NotificationStoreFailure) in
                var part: [String: StorePosition] = [:]
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                try database.query(
                    "SELECT uuid, position FROM notifications WHERE uuid IN (\(marks))", bind: chunk.map { .text($0) }
                ) {
                    part[$0.text(0)] = StorePosition(major: UInt64(clamping: $0.integer(1)))
                    return true
                }
                return part
            }
            found.merge(part) { first, _ in first }
        }
        return found
    }

    package func lastPosition() async throws(NotificationStoreFailure) -> StorePosition {
        try await run { database throws(NotificationStoreFailure) in
            // sqlite_sequence keeps the largest position ever used, also after pruning.
            var last: Int64 = 0
            try database.query("SELECT seq FROM sqlite_sequence WHERE name = 'notifications'", bind: []) {
                last = $0.integer(0)
                return false
            }
            return StorePosition(major: UInt64(clamping: last))
        }
    }

    package func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int {
        try await run { database throws(NotificationStoreFailure) in
            try database.query("DELETE FROM notifications WHERE received_at < ?", bind: [.integer(cutoff)]) { _ in false
            }
            return database.changes
        }
    }
}
