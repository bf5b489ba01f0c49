import Postgres
import ProtoCodec
import SubscriptionState

/// The subscription state in the fleet's PostgreSQL database (`PostgresSchema.subscriptionState`): the same
/// records, ledger, purchases, projection position, events and cursors as `SQLiteSubscriptionStore`, shared by
/// every replica (docs/subscription-state.md, "PostgreSQL").
///
/// Several replicas apply changes to one subscription at once (the webhook's projector on one, an app's post or
/// an Apple read on another). Each apply is one transaction that first takes a transaction-scoped advisory lock
/// per subscription and purchase it touches (in one order, so two batches never wait on each other in a cycle),
/// then reads the record `FOR UPDATE`, folds with the reducer's rules and writes: the newer snapshot wins
/// whatever the arrival order, and a subscription's event sequence is gap-free across replicas. A deadlock or
/// serialization failure (a `removeAll` meeting an apply) rolls back and is retried a few times.
///
/// Event positions come from one counter row, updated last in the transaction: the row stays locked until the
/// commit, so transactions that make events commit in position order and a follower that read past position N
/// never later meets a position below N (a bigserial would hand positions out before commit, in any commit order).
/// Every such commit also `pg_notify`s the events channel, which each replica's store `LISTEN`s to: its
/// `eventSignal` rises for other replicas' events too, and after a reconnect (when notifications may have been
/// missed).
///
/// Reads are single statements (a record and its ledger, or a customer's records, ledgers and purchases, are one
/// statement and so one snapshot), bounded by `SubscriptionStoreLimits`; a row that does not decode fails the
/// call `.corrupt`. The server unreachable or the connection lost fails `.unavailable`; the pool reconnects on its
/// own, so the store works again once the server is back.
package final class PostgresSubscriptionStore: SubscriptionStore {
    /// The channel events are announced on (payload: the newest position the commit made).
    static let channel = "appstore_gateway_subscription_events"
    /// How many times a transaction the server rolled back as a deadlock or serialization failure is run.
    static let attempts = 5

    let database: PostgresDatabase
    let limits: SubscriptionStoreLimits
    package let eventSignal: LiveSignal
    /// Raises `eventSignal` for every notification on `channel` and every reconnect.
    private let listener: Task<Void, Never>

    /// The state in `database` (migrated by `PostgresDatabase.open`); listens for other replicas' events. Fails
    /// `.unavailable` when the server cannot be reached.
    package init(_ database: PostgresDatabase, limits: SubscriptionStoreLimits = .defaults)
        async throws(NotificationStoreFailure)
    {
        let stream: AsyncStream<PostgresListenEvent>
        do {
            stream = try await database.pool.listen(Self.channel)
        } catch {
            throw NotificationStoreFailure(error, while: "listening for subscription events")
        }
        let signal = LiveSignal()
        self.database = database
        self.limits = limits
        self.eventSignal = signal
        // Every element is a reason to look: another replica's events, or a reconnect that may have lost some.
        listener = Task { for await _ in stream { signal.raise() } }
    }

    deinit { listener.cancel() }

    // MARK: Writes

    package func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    {
        let applied = try await transaction("applying subscription changes") { transaction in
            // Round trips: the locks and every row the changes touch; the writes and the event counter; the
            // events; the commit.
            let scope = ApplyScope(transaction, store: self)
            try await scope.load(changes)
            var pending: [PendingEvent] = []
            var applied: [AppliedChange] = []
            applied.reserveCapacity(changes.count)
            for change in changes {
                applied.append(try await self.fold(change, in: scope, events: &pending))
            }
            if let position { scope.write(Self.projectedThroughQuery(position)) }
            try await Self.keep(pending, in: scope)
            return applied
        }
        if applied.contains(where: { !$0.events.isEmpty }) { eventSignal.raise() }
        return applied
    }

    /// One change inside the apply's transaction, its keys locked; its events join `pending`.
    private func fold(
        _ change: SubscriptionChange, in scope: ApplyScope, events pending: inout [PendingEvent]
    ) async throws -> AppliedChange {
        switch change.destination {
        case .ignored:
            return AppliedChange(record: nil, purchase: nil, changed: false)
        case .purchase:
            // A purchase change always has its transaction (`destination` comes from it).
            guard let snapshot = change.transaction else {
                return AppliedChange(record: nil, purchase: nil, changed: false)
            }
            let held = try await scope.purchase(
                PurchaseKey(
                    bundleId: snapshot.payload.bundleId, environment: snapshot.payload.environment,
                    transactionId: snapshot.payload.transactionId))
            let (newest, changed) = SubscriptionFold.purchase(held, snapshot)
            guard changed else { return AppliedChange(record: nil, purchase: newest, changed: false) }
            Self.write(purchase: newest, source: change.source, nowMillis: change.nowMillis, in: scope)
            var events: [SubscriptionEvent] = []
            if let context = change.events {
                events = try await Self.recordEvents(
                    of: SubscriptionKey(of: newest.payload), at: change.nowMillis, in: scope, pending: &pending
                ) {
                    SubscriptionEventMaker.events(
                        ofPurchase: newest, after: $0, at: change.nowMillis, context: context,
                        newEventID: SubscriptionEventIDs.random)
                }
            }
            return AppliedChange(record: nil, purchase: newest, changed: true, events: events)
        case .subscription:
            let held = try await scope.record(change.key)
            let outcome = try SubscriptionFold.record(held, change, limits: limits)
            guard outcome.changed else { return AppliedChange(record: outcome.record, purchase: nil, changed: false) }
            Self.write(outcome, in: scope)
            var events: [SubscriptionEvent] = []
            if let context = change.events {
                events = try await Self.recordEvents(
                    of: change.key, at: change.nowMillis, in: scope, pending: &pending
                ) {
                    SubscriptionEventMaker.events(
                        of: outcome.record, after: $0, at: change.nowMillis, context: context,
                        newEventID: SubscriptionEventIDs.random)
                }
            }
            return AppliedChange(record: outcome.record, purchase: nil, changed: true, events: events)
        }
    }

    package func advance(_ key: SubscriptionKey, context: SubscriptionEventContext, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> [SubscriptionEvent]
    {
        let events = try await transaction("advancing subscription events") { transaction in
            let scope = ApplyScope(transaction, store: self)
            try await scope.load(locks: [Self.lockKey(key)], records: [key], cursors: [key])
            guard let record = try await scope.record(key) else {
                // A cursor without a record (a rebuild that did not recreate it): nothing for time to change.
                Self.clearNextTransition(of: key, in: scope)
                _ = try await scope.flush()
                return [SubscriptionEvent]()
            }
            var pending: [PendingEvent] = []
            let made = try await Self.recordEvents(of: key, at: nowMillis, in: scope, pending: &pending) {
                SubscriptionEventMaker.events(
                    of: record, after: $0, at: nowMillis, context: context, newEventID: SubscriptionEventIDs.random)
            }
            try await Self.keep(pending, in: scope)
            return made
        }
        if !events.isEmpty { eventSignal.raise() }
        return events
    }

    package func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
        let query = Self.projectedThroughQuery(position)
        _ = try await self.query(query.sql, query.parameters, "setting the projected position")
    }

    /// Deletes the records before their ledgers: an apply holding a record `FOR UPDATE` finishes first (its ledger
    /// rows then go too), and one that comes after finds neither.
    package func removeAll() async throws(NotificationStoreFailure) {
        try await transaction("removing the subscription state") { transaction in
            _ = try await transaction.query("DELETE FROM subscription_records")
            _ = try await transaction.query("DELETE FROM subscription_transactions")
            _ = try await transaction.query("DELETE FROM subscription_purchases")
            _ = try await transaction.query(
                "UPDATE subscription_projection SET projected_major = 0, projected_minor = 0 WHERE id = 1")
        }
    }

    package func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int {
        let rows = try await query(
            """
            WITH deleted AS (DELETE FROM subscription_events WHERE occurred_at < $1 RETURNING position),
              marked AS (
                INSERT INTO subscription_event_pruning(id, through)
                  SELECT 1, max(position) FROM deleted HAVING count(*) > 0
                  ON CONFLICT (id) DO UPDATE
                    SET through = GREATEST(subscription_event_pruning.through, excluded.through))
            SELECT count(*) FROM deleted
            """, [.integer(millis)], "pruning subscription events")
        return Int(clamping: try Self.integer(rows.first?[0], "the pruned events' count"))
    }

    // MARK: Reads

    package func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        let rows = try await query(
            Self.recordPart + " UNION ALL " + Self.ledgerPart + " ORDER BY part",
            Self.parameters(key) + [.integer(Int64(limits.transactionsPerRead) + 1)], "reading a subscription")
        let parts = try parts(rows, of: "the record \(key.originalTransactionId)")
        return try parts.records(key.bundleId, key.environment).first
    }

    /// The record row and the one ledger row it names as current, in one statement (a primary-key lookup each);
    /// a record whose row names no transaction, or one the ledger lacks, is read whole.
    package func currentRecord(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        guard case .record(let record, _) = try await currentRecord(key, unlessStamped: nil) else { return nil }
        return record
    }

    /// A stamped read asks for the record's stamp alone (a few bytes from one index lookup), and reads the record
    /// and its current ledger row only when the stamp is not `stamp`; an unstamped read reads them at once. Each
    /// is a lookup shared with every read of the same app and environment issued in the same pass of the loop
    /// (`PostgresPool.lookup`): one statement for all of them.
    package func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?)
        async throws(NotificationStoreFailure) -> CurrentRead
    {
        if let stamp {
            let rows = try await lookup(Self.recordStamps, key, keyColumn: 0, "reading a subscription's stamp")
            guard let row = rows.first else { return .missing }
            if try Self.stamp(row, version: 1, updatedAt: 2, current: 3) == stamp { return .unchanged }
        }
        let rows = try await lookup(Self.currentRecords, key, keyColumn: 1, "reading a subscription")
        var recordRow: PostgresRow?
        for row in rows where try Self.integer(row[0], "a row's part") == 0 { recordRow = row }
        guard let row = recordRow else { return .missing }
        let found = try Self.stamp(row, version: 3, updatedAt: 4, current: 2)
        let parts = try parts(rows, of: "the record \(key.originalTransactionId)")
        guard let record = try parts.records(key.bundleId, key.environment).first else { return .missing }
        if record.transactions.isEmpty {
            guard let whole = try await self.record(key) else { return .missing }
            return .record(whole, found)
        }
        return .record(record, found)
    }

    package func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    {
        if appAccountToken.isEmpty { return CustomerView(subscriptions: [], purchases: []) }
        let rows = try await query(
            Self.customerParts + " ORDER BY part",
            [
                .text(bundleId), .text(AppleNames.environment(environment)), .text(appAccountToken),
                .integer(Int64(limits.recordsPerCustomer) + 1), .integer(Int64(limits.transactionsPerRead) + 1),
                .integer(Int64(limits.purchasesPerCustomer) + 1),
            ], "reading a customer")
        let parts = try parts(rows, of: "the customer's records")
        return CustomerView(
            subscriptions: try parts.records(bundleId, environment),
            purchases: try parts.purchases(bundleId, environment))
    }

    package func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
        let rows = try await query(
            Self.recordPart + " UNION ALL " + Self.ledgerPart + " UNION ALL " + Self.originalPurchasesPart
                + " ORDER BY part",
            Self.parameters(key) + [
                .integer(Int64(limits.transactionsPerRead) + 1), .integer(Int64(limits.purchasesPerCustomer) + 1),
            ], "reading a customer")
        let parts = try parts(rows, of: "the record \(key.originalTransactionId)")
        return CustomerView(
            subscriptions: try parts.records(key.bundleId, key.environment),
            purchases: try parts.purchases(key.bundleId, key.environment))
    }

    package func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
        let rows = try await query(
            "SELECT projected_major::text, projected_minor::text FROM subscription_projection WHERE id = 1", [],
            "reading the projected position")
        guard let row = rows.first else { return .zero }
        guard let major = UInt64(try Self.text(row[0], "projected_major")),
            let minor = UInt64(try Self.text(row[1], "projected_minor"))
        else { throw Self.corrupt("the projected position is not two unsigned 64-bit numbers") }
        return StorePosition(major: major, minor: minor)
    }

    package func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
        async throws(NotificationStoreFailure) -> [SubscriptionKey]
    {
        if bundleIds.isEmpty || limit <= 0 { return [] }
        let rows = try await query(
            "SELECT bundle_id, environment, original_transaction_id FROM subscription_event_cursors "
                + "WHERE next_transition IS NOT NULL AND next_transition <= $1 AND bundle_id IN ("
                + Self.placeholders(from: 3, count: bundleIds.count) + ") ORDER BY next_transition LIMIT $2",
            [.integer(nowMillis), .integer(Int64(limit))] + bundleIds.map { .text($0) }, "reading due transitions")
        return try rows.map { row throws(NotificationStoreFailure) in try Self.key(row, from: 0) }
    }

    package func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64? {
        if bundleIds.isEmpty { return nil }
        let rows = try await query(
            "SELECT min(next_transition) FROM subscription_event_cursors WHERE next_transition IS NOT NULL "
                + "AND bundle_id IN (" + Self.placeholders(from: 1, count: bundleIds.count) + ")",
            bundleIds.map { .text($0) }, "reading the next transition")
        return try Self.optionalInteger(rows.first?[0], "the next transition")
    }

    package func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    {
        if limit <= 0 { return [] }
        let start: [PostgresValue?] = key.map(Self.parameters) ?? [.text(""), .text(""), .text("")]
        let rows = try await query(
            "SELECT bundle_id, environment, original_transaction_id FROM subscription_records "
                + "WHERE (bundle_id, environment, original_transaction_id) > ($1, $2, $3) "
                + "ORDER BY bundle_id, environment, original_transaction_id LIMIT $4",
            start + [.integer(Int64(limit))], "reading record keys")
        return try rows.map { row throws(NotificationStoreFailure) in try Self.key(row, from: 0) }
    }

    package func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredPurchase]
    {
        if limit <= 0 { return [] }
        let start: [PostgresValue?] =
            key.map { [.text($0.bundleId), .text(AppleNames.environment($0.environment)), .text($0.transactionId)] }
            ?? [.text(""), .text(""), .text("")]
        let rows = try await query(
            "SELECT transaction_id, jws, payload, bundle_id, environment, updated_at, source "
                + "FROM subscription_purchases WHERE (bundle_id, environment, transaction_id) > ($1, $2, $3) "
                + "ORDER BY bundle_id, environment, transaction_id LIMIT $4",
            start + [.integer(Int64(limit))], "reading purchases")
        return try rows.map { row throws(NotificationStoreFailure) in
            let environmentName = try Self.text(row[4], "a purchase's environment")
            guard let environment = AppleNames.environment(named: environmentName) else {
                throw Self.corrupt("a purchase names an unknown environment '\(environmentName.prefix(40))'")
            }
            let sourceName = try Self.text(row[6], "a purchase's source")
            guard let source = SnapshotSource(rawValue: sourceName) else {
                throw Self.corrupt("a purchase names an unknown source '\(sourceName.prefix(40))'")
            }
            let purchase = try purchase(
                row, from: 0, bundleId: try Self.text(row[3], "a purchase's bundle id"), environment: environment)
            return StoredPurchase(
                purchase: purchase, updatedAtMillis: try Self.integer(row[5], "a purchase's update time"),
                source: source)
        }
    }

    package func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    {
        if limit <= 0 { return [] }
        let rows = try await query(
            "SELECT position, payload FROM subscription_events WHERE position > $1 "
                + (bundleId == nil ? "" : "AND bundle_id = $3 ") + "ORDER BY position LIMIT $2",
            [.integer(position), .integer(Int64(limit))] + (bundleId.map { [.text($0)] } ?? []),
            "reading subscription events")
        let eventBytes = SQLiteSubscriptionTables.eventBytes(limits)
        return try rows.map { row throws(NotificationStoreFailure) in
            let at = try Self.integer(row[0], "an event's position")
            guard let bytes = try Self.bytes(row[1], limit: eventBytes, "the event at position \(at)"),
                let event = try? SubscriptionEvent(serializedBytes: bytes)
            else { throw Self.corrupt("the event at position \(at) does not decode") }
            return StoredSubscriptionEvent(position: at, event: event)
        }
    }

    package func lastEventPosition() async throws(NotificationStoreFailure) -> Int64 {
        let rows = try await query(
            "SELECT coalesce(max(position), 0) FROM subscription_events", [], "reading the last event position")
        return try Self.integer(rows.first?[0], "the last event position")
    }

    package func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64 {
        let rows = try await query(
            "SELECT through FROM subscription_event_pruning WHERE id = 1", [], "reading how far events were pruned")
        guard let row = rows.first else { return 0 }
        return try Self.integer(row[0], "the pruned position")
    }

    /// Number of records: a full count, for tests and state-seed.
    package func recordCount() async throws(NotificationStoreFailure) -> Int {
        let rows = try await query("SELECT count(*) FROM subscription_records", [], "counting records")
        return Int(clamping: try Self.integer(rows.first?[0], "the record count"))
    }

    // MARK: Running statements

    /// Runs `sql` on the pool; a failure is the store's (`NotificationStoreFailure(_:while:)`).
    func query(_ sql: String, _ parameters: [PostgresValue?], _ doing: String) async throws(NotificationStoreFailure)
        -> PostgresRows
    {
        do {
            return try await database.pool.query(sql, parameters)
        } catch {
            throw NotificationStoreFailure(error, while: doing)
        }
    }

    /// A record's stamp from the columns of `row` that hold its version, update time and current transaction id.
    static func stamp(_ row: PostgresRow, version: Int, updatedAt: Int, current: Int)
        throws(NotificationStoreFailure) -> RecordStamp
    {
        RecordStamp(
            version: UInt64(bitPattern: try integer(row[version], "the version of a record")),
            updatedAtMillis: try integer(row[updatedAt], "the update time of a record"),
            currentTransactionId: try text(row[current], "the current transaction id of a record"))
    }

    /// The rows of `key`'s record from `sql`, a lookup shared with the reads of other records of its app and
    /// environment issued in this pass of the loop (`PostgresPool.lookup`; the record's original transaction id
    /// is the key, in column `keyColumn`).
    func lookup(_ sql: String, _ key: SubscriptionKey, keyColumn: Int, _ doing: String)
        async throws(NotificationStoreFailure) -> [PostgresRow]
    {
        do {
            return try await database.pool.lookup(
                sql, shared: [.text(key.bundleId), .text(AppleNames.environment(key.environment))],
                key: key.originalTransactionId, keyColumn: keyColumn)
        } catch {
            throw NotificationStoreFailure(error, while: doing)
        }
    }

    /// Runs `body` as one transaction, again (a few times, a little later each) when the server rolled it back
    /// as a deadlock or serialization failure; nothing else is retried (a commit whose connection broke may have
    /// happened).
    func transaction<T>(_ doing: String, _ body: (PostgresTransaction) async throws -> T)
        async throws(NotificationStoreFailure) -> T
    {
        var attempt = 1
        while true {
            do {
                return try await database.pool.transaction(body)
            } catch let failure as NotificationStoreFailure {
                throw failure
            } catch let error as PostgresError {
                guard error.isSerializationFailure, attempt < Self.attempts else {
                    throw NotificationStoreFailure(error, while: doing)
                }
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...(10 * attempt))))
                attempt += 1
            } catch {
                throw NotificationStoreFailure("PostgreSQL \(doing): \(error)")
            }
        }
    }
}
