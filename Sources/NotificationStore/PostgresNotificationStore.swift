import GatewayFoundation
import Postgres

/// The notification log a fleet shares in PostgreSQL (`PostgresDatabase`, schema version 1): every replica's
/// webhook inserts into one `notifications` table and every replica's followers, projection and sinks read it.
///
/// **Durability.** An insert returns once its transaction committed with the server's default
/// `synchronous_commit=on` (the WAL flushed), so the webhook's 200 to Apple follows a durable row. Inserts that
/// arrive while a commit is under way are committed together in the next one (group commit, as the SQLite store
/// does): one transaction and one WAL flush per group, each caller answered after its own row's commit.
///
/// **Positions become visible in order.** A position comes from an identity sequence, allocated before the
/// transaction commits, so two transactions could commit their positions out of order and a follower that read
/// "after N" would skip a lower position committed later. Every insert transaction therefore takes one
/// transaction-scoped advisory lock (`lockKey`, the same on every replica) before it allocates a position, and
/// holds it until its commit: PostgreSQL releases a transaction's locks only after its commit is visible, so the
/// next writer allocates its positions after every lower position is committed (or rolled back, leaving a gap). A
/// reader that has seen position N can therefore never later see a new position below N. The lock serialises
/// writers across the fleet; group commit keeps that to one short transaction per group per replica.
///
/// **Live followers.** `signal` is raised after every local insert, and (once `start` runs) whenever any replica
/// commits one: the insert's transaction sends `pg_notify` on `channel`, which the pool's first connection
/// `LISTEN`s to. A lost connection is replaced and listens again; notifications sent meanwhile are lost, so the
/// signal is raised on every (re)subscription, and `isShared` makes followers poll anyway.
///
/// **Bounds.** Reads by position return at most `limit` entries and stop early once their payloads pass
/// `pageBytes` (at least one entry; callers continue after `through`), so a run of the largest notifications
/// never makes a page pass the pool's result bounds. A catch-up's `window` page is never cut short (a short page
/// ends the catch-up): at the webhook's 1 MiB body cap its 50 entries fit the 64 MiB result bound.
package final class PostgresNotificationStore: NotificationStore {
    /// The shared database; its owner opens and closes it (other stores use its pool too).
    package let database: PostgresDatabase
    package let signal = LiveSignal()
    package var isShared: Bool { true }
    /// Most payload bytes a read by position returns before it stops (it returns one entry at least).
    package let pageBytes: Int

    /// The channel every insert transaction notifies and every replica listens on.
    package static let channel = "gateway_notification_log"
    /// The advisory lock that orders the log's writers ("appslog!", an arbitrary constant).
    static let lockKey: Int64 = 0x6170_7073_6C6F_6721
    /// The default `pageBytes`: well inside the default 64 MiB result bound, with the other columns.
    package static let defaultPageBytes = 16 << 20
    /// Most rows in one group commit (9 parameters each, far below the protocol's 65,535).
    static let groupRows = 500
    /// Most payload bytes in one group commit (a larger notification goes alone).
    static let groupBytes = 8 << 20
    /// Most entries one read by position returns, whatever `limit` asks (the pool's row bound is 100,000).
    static let maxPageRows = 10_000
    /// Rows deleted per statement while pruning, so no statement runs past its deadline.
    static let pruneBatch = 10_000

    private let pending = Lock(PendingGroup())
    private let listener = Lock(Listener())

    /// A store on `database` (migrated by `PostgresDatabase.open`). Call `start` to hear other replicas' inserts;
    /// `pageBytes` bounds a read's payloads (tests make it small).
    package init(database: PostgresDatabase, pageBytes: Int = PostgresNotificationStore.defaultPageBytes) {
        self.database = database
        self.pageBytes = max(1, pageBytes)
    }

    deinit {
        listener.withLock { $0.task }?.cancel()
    }

    private var pool: PostgresPool { database.pool }

    // MARK: Listening

    private struct Listener: Sendable {
        var task: Task<Void, Never>?
        var closed = false
    }

    /// Starts listening for every replica's inserts (`channel`) and returns once the first `LISTEN` is in place or
    /// failed; a task keeps listening until `close`, again after each reconnect, and retries (with backoff up to a
    /// second) while the listening connection is down. Calling it again does nothing.
    package func start() async {
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        let started = listener.withLock { state -> Bool in
            guard state.task == nil, !state.closed else { return false }
            state.task = Task { [pool, signal] in
                await Self.listen(on: pool, raising: signal, ready: readyContinuation)
            }
            return true
        }
        guard started else { return }
        for await _ in ready {}
    }

    /// Stops listening (the database stays open: its owner closes it). Idempotent.
    package func close() async {
        let task = listener.withLock { state -> Task<Void, Never>? in
            state.closed = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }

    /// Raises `signal` on every notification and (re)subscription until cancelled or the pool is closed.
    private static func listen(
        on pool: PostgresPool, raising signal: LiveSignal, ready: AsyncStream<Void>.Continuation
    ) async {
        defer { ready.finish() }
        var failures = 0
        while !Task.isCancelled {
            do throws(PostgresError) {
                let events = try await pool.listen(channel)
                failures = 0
                // Whatever was committed while nobody here listened announced itself to no one (raised before
                // `start` returns, so a generation read after it is not passed by this).
                signal.raise()
                ready.finish()
                // A notification, or `.resubscribed` after a reconnect (which lost those sent meanwhile).
                for await _ in events { signal.raise() }
            } catch {
                ready.finish()
                if error.kind == .closed { return }
                failures += 1
            }
            // The stream ended (the connection closed) or listening failed (it is down): try again shortly.
            let delay = Duration.milliseconds(min(1_000, 50 << min(failures, 5)))
            try? await Task.sleep(for: delay)
        }
    }

    // MARK: Inserting

    /// One insert waiting for its group's commit.
    private struct PendingInsert: Sendable {
        var notification: NewNotification
        var receivedAt: Int64
        var done: CheckedContinuation<Result<InsertOutcome, NotificationStoreFailure>, Never>
    }

    private struct PendingGroup: Sendable {
        var inserts: [PendingInsert] = []
        /// Whether a task is committing groups (it takes every pending insert until none is left).
        var committing = false
    }

    /// Stores `notification` durably, committed with the inserts pending at the same time (group commit). A
    /// failure of the group's transaction fails every insert of it (nothing of it was kept, or the commit's
    /// outcome is unknown: inserting again finds the row).
    package func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    {
        // PostgreSQL's text cannot hold NUL: refused alone, before it could fail a whole group.
        if Self.containsNUL(notification) {
            throw NotificationStoreFailure(
                "notification \(notification.uuid.debugDescription) has a NUL character, which PostgreSQL text "
                    + "cannot store")
        }
        let result: Result<InsertOutcome, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            let first = pending.withLock { group -> Bool in
                group.inserts.append(
                    PendingInsert(notification: notification, receivedAt: receivedAt, done: continuation))
                defer { group.committing = true }
                return !group.committing
            }
            if first { Task { await self.commitPending() } }
        }
        return try result.get()
    }

    /// Commits groups until no insert is pending.
    private func commitPending() async {
        while let group = nextGroup() {
            switch await commit(group) {
            case .success(let outcomes):
                if outcomes.contains(where: { if case .stored = $0 { true } else { false } }) { signal.raise() }
                for (insert, outcome) in zip(group, outcomes) { insert.done.resume(returning: .success(outcome)) }
            case .failure(let failure):
                for insert in group { insert.done.resume(returning: .failure(failure)) }
            }
        }
    }

    /// The oldest pending inserts, within `groupRows` and `groupBytes`; nil (and nobody committing) when none.
    private func nextGroup() -> [PendingInsert]? {
        pending.withLock { group -> [PendingInsert]? in
            guard !group.inserts.isEmpty else {
                group.committing = false
                return nil
            }
            var count = 0
            var bytes = 0
            for insert in group.inserts {
                let size = insert.notification.signedPayload.utf8.count
                if count > 0 && (count == Self.groupRows || bytes + size > Self.groupBytes) { break }
                count += 1
                bytes += size
            }
            let taken = Array(group.inserts.prefix(count))
            group.inserts.removeFirst(count)
            return taken
        }
    }

    /// One transaction for `group`: the log's lock, one statement inserting the new UUIDs and finding the stored
    /// ones, and a notification when anything was stored. A UUID repeated within the group is a duplicate of its
    /// first occurrence.
    private func commit(_ group: [PendingInsert]) async -> Result<[InsertOutcome], NotificationStoreFailure> {
        var rowOf: [String: Int] = [:]
        var rows: [PendingInsert] = []
        // Per insert of the group: its row, and whether an earlier insert of the group has its UUID.
        var slots: [(row: Int, repeated: Bool)] = []
        for insert in group {
            if let row = rowOf[insert.notification.uuid] {
                slots.append((row, true))
            } else {
                rowOf[insert.notification.uuid] = rows.count
                slots.append((rows.count, false))
                rows.append(insert)
            }
        }
        let (sql, parameters) = Self.insertStatement(rows)
        let outcomes: [InsertOutcome]
        do throws(PostgresError) {
            // One round trip for the whole transaction: the lock, the insert, and the announcement (the head,
            // delivered at the commit; a group of duplicates only wakes the followers for nothing).
            let results = try await pool.transaction([
                PostgresQuery("SELECT pg_advisory_xact_lock($1)", [.integer(Self.lockKey)]),
                PostgresQuery(sql, parameters),
                PostgresQuery(
                    "SELECT pg_notify($1, last_position::text) FROM notification_log_head WHERE id = 1",
                    [.text(Self.channel)]),
            ])
            outcomes = try Self.outcomes(of: results[1], count: rows.count)
        } catch {
            return .failure(NotificationStoreFailure(error, while: "storing notifications"))
        }
        return .success(
            slots.map { slot in
                let outcome = outcomes[slot.row]
                guard slot.repeated else { return outcome }
                switch outcome {
                case .stored(let position), .duplicate(let position): return .duplicate(position)
                }
            })
    }

    /// The group's statement: the rows as parameters (`input`, numbered in arrival order), inserted in that order
    /// unless their UUID is stored, the head moved to the newest position inserted, and per input row the
    /// position inserted or the one already stored (the main query's snapshot does not see the CTE's inserts).
    private static func insertStatement(_ rows: [PendingInsert]) -> (String, [PostgresValue?]) {
        var values: [String] = []
        var parameters: [PostgresValue?] = []
        parameters.reserveCapacity(rows.count * 9)
        for (index, row) in rows.enumerated() {
            let first = parameters.count + 1
            values.append("(" + (first..<first + 9).map { "$\($0)" }.joined(separator: ", ") + ")")
            let notification = row.notification
            parameters += [
                .integer(Int64(index)), .text(notification.uuid), .integer(notification.signedDate),
                .integer(row.receivedAt),
                .text(notification.bundleId), .text(notification.environment), .text(notification.notificationType),
                .text(notification.subtype), .text(notification.signedPayload),
            ]
        }
        let sql = """
            WITH input(ord, uuid, signed_date, received_at, bundle_id, environment, notification_type, subtype,
                signed_payload) AS (VALUES \(values.joined(separator: ", "))),
              inserted AS (
                INSERT INTO notifications(uuid, signed_date, received_at, bundle_id, environment, notification_type,
                  subtype, signed_payload)
                SELECT uuid, signed_date, received_at, bundle_id, environment, notification_type, subtype,
                  signed_payload
                FROM input WHERE NOT EXISTS (SELECT 1 FROM notifications stored WHERE stored.uuid = input.uuid)
                ORDER BY ord
                ON CONFLICT (uuid) DO NOTHING
                RETURNING uuid, position),
              head AS (
                UPDATE notification_log_head SET last_position = (SELECT max(position) FROM inserted)
                WHERE id = 1 AND last_position < (SELECT max(position) FROM inserted))
            SELECT input.ord, inserted.position, stored.position
            FROM input
              LEFT JOIN inserted ON inserted.uuid = input.uuid
              LEFT JOIN notifications stored ON stored.uuid = input.uuid
            ORDER BY input.ord
            """
        return (sql, parameters)
    }

    /// Each input row's outcome, in order.
    static func outcomes(of result: PostgresRows, count: Int) throws(PostgresError) -> [InsertOutcome] {
        guard result.count == count else {
            throw PostgresError(.decoding, "the insert answered \(result.count) rows for \(count)")
        }
        var outcomes: [InsertOutcome] = []
        outcomes.reserveCapacity(count)
        for (index, row) in result.enumerated() {
            guard try row[0].int() == Int64(index) else {
                throw PostgresError(.decoding, "the insert answered its rows out of order")
            }
            if !row[1].isNull {
                outcomes.append(.stored(try position(row[1])))
            } else if !row[2].isNull {
                outcomes.append(.duplicate(try position(row[2])))
            } else {
                // Neither inserted nor found: only a writer that skipped the lock could do that. Retrying helps.
                throw PostgresError(.server, "a notification was neither stored nor found; retry")
            }
        }
        return outcomes
    }

    static func containsNUL(_ notification: NewNotification) -> Bool {
        [
            notification.uuid, notification.bundleId, notification.environment, notification.notificationType,
            notification.subtype, notification.signedPayload,
        ].contains(where: PostgresValue.holdsNUL)
    }

    // MARK: Reading

    static let columns =
        "position, received_at, uuid, signed_date, bundle_id, environment, notification_type, subtype, signed_payload"

    /// Runs `body`, mapping its error to the store's (`NotificationStoreFailure(_:while:)`).
    private func run<Value: Sendable>(
        _ doing: String, _ body: () async throws(PostgresError) -> Value
    ) async throws(NotificationStoreFailure) -> Value {
        do throws(PostgresError) {
            return try await body()
        } catch {
            throw NotificationStoreFailure(error, while: doing)
        }
    }

    /// The filter's set optional columns as conditions on new parameters (unset or empty matches every value, as
    /// in the SQLite store); nil when a value has a NUL character, which nothing stored has.
    static func optionalConditions(_ filter: StoreFilter, parameters: inout [PostgresValue?]) -> String? {
        var sql = ""
        let columns = [
            ("environment", filter.environment), ("notification_type", filter.notificationType),
            ("subtype", filter.subtype),
        ]
        for case let (column, value?) in columns where !value.isEmpty {
            if PostgresValue.holdsNUL(value) { return nil }
            parameters.append(.text(value))
            sql += " AND \(column) = $\(parameters.count)"
        }
        return sql
    }

    /// A read by position: at most `limit` rows after `after`, in position order, cut after the row whose payload
    /// passes `pageBytes` (the running sum is computed over the limited rows only).
    private func pageByPosition(
        condition: String, parameters: [PostgresValue?], after position: StorePosition, limit: Int
    ) async throws(NotificationStoreFailure) -> StorePage {
        var parameters = parameters
        parameters.append(.integer(Int64(clamping: position.major)))
        let afterIndex = parameters.count
        parameters.append(.integer(Int64(min(max(1, limit), Self.maxPageRows))))
        let limitIndex = parameters.count
        parameters.append(.integer(Int64(pageBytes)))
        let budgetIndex = parameters.count
        let sql = """
            SELECT \(Self.columns) FROM (
              SELECT \(Self.columns), sum(octet_length(signed_payload)) OVER (ORDER BY position
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - octet_length(signed_payload) AS before
              FROM notifications WHERE position > $\(afterIndex)\(condition)
              ORDER BY position LIMIT $\(limitIndex)) page
            WHERE before < $\(budgetIndex) ORDER BY position
            """
        let entries = try await run("reading the notification log") { () throws(PostgresError) in
            try Self.entries(try await pool.query(sql, parameters))
        }
        return StorePage(entries: entries, through: entries.last?.position ?? position)
    }

    package func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure) -> StorePage
    {
        var parameters: [PostgresValue?] = [.text(filter.bundleId)]
        guard !filter.bundleId.utf8.contains(0),
            let conditions = Self.optionalConditions(filter, parameters: &parameters)
        else { return StorePage(entries: [], through: position) }
        return try await pageByPosition(
            condition: " AND bundle_id = $1" + conditions, parameters: parameters, after: position, limit: limit)
    }

    package func entries(after position: StorePosition, limit: Int) async throws(NotificationStoreFailure)
        -> StorePage
    {
        try await pageByPosition(condition: "", parameters: [], after: position, limit: limit)
    }

    package func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    {
        var parameters: [PostgresValue?] = [
            .text(filter.bundleId), .integer(Int64(clamping: through.major)), .integer(filter.start),
            .integer(filter.end), .integer(key?.signedDate ?? Int64.min),
            .integer(Int64(clamping: key?.position.major ?? 0)),
        ]
        guard !filter.bundleId.utf8.contains(0),
            let conditions = Self.optionalConditions(filter, parameters: &parameters)
        else { return [] }
        parameters.append(.integer(Int64(max(1, limit))))
        let sql = """
            SELECT \(Self.columns) FROM notifications
            WHERE bundle_id = $1 AND position <= $2 AND signed_date >= $3 AND signed_date < $4
              AND (signed_date, position) > ($5, $6)\(conditions)
            ORDER BY signed_date, position LIMIT $\(parameters.count)
            """
        return try await run("reading a notification window") { () throws(PostgresError) in
            try Self.entries(try await pool.query(sql, parameters))
        }
    }

    package func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition] {
        // A UUID with a NUL character cannot be stored, so it is not looked for.
        let asked = uuids.filter { !$0.utf8.contains(0) }
        var found: [String: StorePosition] = [:]
        for start in stride(from: 0, to: asked.count, by: NotificationStoreLimits.lookupBatch) {
            let chunk = Array(asked[start..<min(asked.count, start + NotificationStoreLimits.lookupBatch)])
            let marks = (1...chunk.count).map { "$\($0)" }.joined(separator: ", ")
            let sql = "SELECT uuid, position FROM notifications WHERE uuid IN (\(marks)) LIMIT $\(chunk.count + 1)"
            let parameters: [PostgresValue?] = chunk.map { .text($0) } + [.integer(Int64(chunk.count))]
            let part = try await run("looking up notifications") { () throws(PostgresError) in
                var part: [String: StorePosition] = [:]
                for row in try await pool.query(sql, parameters) {
                    part[try Self.required(row[0].string(), "uuid")] = try Self.position(row[1])
                }
                return part
            }
            found.merge(part) { first, _ in first }
        }
        return found
    }

    package func lastPosition() async throws(NotificationStoreFailure) -> StorePosition {
        try await run("reading the notification log's head") { () throws(PostgresError) in
            let rows = try await pool.query("SELECT last_position FROM notification_log_head WHERE id = 1")
            guard let row = rows.first else { throw PostgresError(.decoding, "notification_log_head has no row") }
            return try Self.position(row[0], zeroAllowed: true)
        }
    }

    /// Deletes in batches of `pruneBatch` rows, one statement each, until a batch comes back short (each batch's
    /// positions found by arrival, then deleted by primary key: `IN (SELECT …)` would scan the table).
    package func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int {
        try await run("pruning the notification log") { () throws(PostgresError) in
            var removed = 0
            while true {
                let rows = try await pool.query(
                    """
                    DELETE FROM notifications WHERE position = ANY (ARRAY(
                      SELECT position FROM notifications WHERE received_at < $1 LIMIT $2))
                    """, [.integer(cutoff), .integer(Int64(Self.pruneBatch))])
                let count = try Self.required(rows.affectedRows, "DELETE's row count")
                removed += count
                if count < Self.pruneBatch { return removed }
            }
        }
    }

    // MARK: Decoding

    /// The entries of a `columns` result; a row that does not decode fails the read (`.decoding`, so `.corrupt`).
    static func entries(_ rows: PostgresRows) throws(PostgresError) -> [StoredNotification] {
        var entries: [StoredNotification] = []
        entries.reserveCapacity(rows.count)
        for row in rows {
            entries.append(
                StoredNotification(
                    position: try position(row[0]), receivedAt: try required(row[1].int(), "received_at"),
                    notification: NewNotification(
                        uuid: try required(row[2].string(), "uuid"),
                        signedDate: try required(row[3].int(), "signed_date"),
                        bundleId: try required(row[4].string(), "bundle_id"),
                        environment: try required(row[5].string(), "environment"),
                        notificationType: try required(row[6].string(), "notification_type"),
                        subtype: try required(row[7].string(), "subtype"),
                        signedPayload: try required(row[8].string(), "signed_payload"))))
        }
        return entries
    }

    static func required<Value>(_ value: Value?, _ what: String) throws(PostgresError) -> Value {
        guard let value else { throw PostgresError(.decoding, "\(what) is NULL") }
        return value
    }

    /// A position cell: positive (or zero where `zeroAllowed`), else `.decoding`.
    static func position(_ cell: PostgresCell, zeroAllowed: Bool = false) throws(PostgresError) -> StorePosition {
        let value = try required(cell.int(), "a position")
        guard let major = UInt64(exactly: value), major > 0 || zeroAllowed else {
            throw PostgresError(.decoding, "position \(value) is out of range")
        }
        return StorePosition(major: major)
    }
}
