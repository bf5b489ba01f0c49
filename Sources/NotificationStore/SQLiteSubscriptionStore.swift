import ProtoCodec
import SubscriptionState

/// The subscription state in the notification store's SQLite file (`SQLiteNotificationStore.subscriptions`):
/// tables `subscription_records`, `subscription_transactions`, `subscription_purchases`, `state_progress` and
/// the analysts' view `subscription_state` (docs/subscription-state.md, "Storage").
///
/// Writes run on the notification store's connection and queue: one writer for the webhook's inserts and the
/// state, each apply one transaction committed as durably as an insert (WAL, `synchronous=FULL`). Reads run on
/// a second, read-only connection with its own queue: in WAL mode they see every committed write without
/// waiting behind a writer's fsync, and each read is one snapshot (its queries share one read transaction).
package final class SQLiteSubscriptionStore: SubscriptionStore {
    private let writer: SQLiteConnection
    private let reader: SQLiteConnection
    private let limits: SubscriptionStoreLimits
    package let eventSignal = LiveSignal()

    /// The state of the file at `path`, whose tables `SQLiteSubscriptionSchema.prepare` made, written through
    /// `writer` (the notification store's connection); opens the read connection.
    init(writer: SQLiteConnection, path: String, limits: SubscriptionStoreLimits) throws(NotificationStoreFailure) {
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA query_only=ON")
        self.writer = writer
        self.reader = SQLiteConnection(database, label: "appstore-gateway.subscription-reads")
        self.limits = limits
    }

    package func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    {
        let limits = self.limits
        let applied = try await writer.run { database throws(NotificationStoreFailure) in
            let tables = SQLiteSubscriptionTables(database: database, limits: limits)
            return try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                var applied: [AppliedChange] = []
                applied.reserveCapacity(changes.count)
                for change in changes {
                    applied.append(try Self.fold(change, into: tables))
                }
                if let position { try tables.setProjectedThrough(position) }
                return applied
            }
        }
        if applied.contains(where: { !$0.events.isEmpty }) { eventSignal.raise() }
        return applied
    }

    /// One change inside the apply's transaction.
    private static func fold(_ change: SubscriptionChange, into tables: SQLiteSubscriptionTables)
        throws(NotificationStoreFailure) -> AppliedChange
    {
        switch change.destination {
        case .ignored:
            return AppliedChange(record: nil, purchase: nil, changed: false)
        case .purchase:
            // A purchase change always has its transaction (`destination` comes from it).
            guard let snapshot = change.transaction else {
                return AppliedChange(record: nil, purchase: nil, changed: false)
            }
            let held = try tables.purchase(
                bundleId: change.key.bundleId, environment: change.key.environment,
                transactionId: snapshot.payload.transactionId)
            let (newest, changed) = SubscriptionFold.purchase(held, snapshot)
            guard changed else { return AppliedChange(record: nil, purchase: newest, changed: false) }
            try tables.write(purchase: newest, source: change.source, nowMillis: change.nowMillis)
            var events: [SubscriptionEvent] = []
            if let context = change.events {
                events = try tables.recordEvents(of: SubscriptionKey(of: newest.payload), at: change.nowMillis) {
                    SubscriptionEventMaker.events(
                        ofPurchase: newest, after: $0, at: change.nowMillis, context: context,
                        newEventID: SubscriptionEventIDs.random)
                }
            }
            return AppliedChange(record: nil, purchase: newest, changed: true, events: events)
        case .subscription:
            let outcome = try SubscriptionFold.record(try tables.record(change.key), change, limits: tables.limits)
            guard outcome.changed else { return AppliedChange(record: outcome.record, purchase: nil, changed: false) }
            try tables.write(outcome)
            var events: [SubscriptionEvent] = []
            if let context = change.events {
                events = try tables.recordEvents(of: change.key, at: change.nowMillis) {
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
        let limits = self.limits
        let events = try await writer.run { database throws(NotificationStoreFailure) in
            let tables = SQLiteSubscriptionTables(database: database, limits: limits)
            return try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                guard let record = try tables.record(key) else {
                    // A cursor without a record (a rebuild that did not recreate it): nothing for time to change.
                    try tables.clearNextTransition(of: key)
                    return [SubscriptionEvent]()
                }
                return try tables.recordEvents(of: key, at: nowMillis) {
                    SubscriptionEventMaker.events(
                        of: record, after: $0, at: nowMillis, context: context, newEventID: SubscriptionEventIDs.random)
                }
            }
        }
        if !events.isEmpty { eventSignal.raise() }
        return events
    }

    package func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
        async throws(NotificationStoreFailure) -> [SubscriptionKey]
    {
        try await read { tables throws(NotificationStoreFailure) in
            try tables.dueTransitions(through: nowMillis, bundleIds: bundleIds, limit: limit)
        }
    }

    package func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64? {
        try await read { tables throws(NotificationStoreFailure) in try tables.nextTransition(bundleIds: bundleIds) }
    }

    package func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    {
        try await read { tables throws(NotificationStoreFailure) in try tables.recordKeys(after: key, limit: limit) }
    }

    package func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredPurchase]
    {
        try await read { tables throws(NotificationStoreFailure) in try tables.purchases(after: key, limit: limit) }
    }

    package func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    {
        try await read { tables throws(NotificationStoreFailure) in
            try tables.events(after: position, bundleId: bundleId, limit: limit)
        }
    }

    package func lastEventPosition() async throws(NotificationStoreFailure) -> Int64 {
        try await read { tables throws(NotificationStoreFailure) in try tables.lastEventPosition() }
    }

    package func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64 {
        try await read { tables throws(NotificationStoreFailure) in try tables.eventsPrunedThrough() }
    }

    package func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int {
        let limits = self.limits
        return try await writer.run { database throws(NotificationStoreFailure) in
            try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                try SQLiteSubscriptionTables(database: database, limits: limits).pruneEvents(occurredBefore: millis)
            }
        }
    }

    package func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        try await read { tables throws(NotificationStoreFailure) in try tables.record(key) }
    }

    package func currentRecord(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        try await read { tables throws(NotificationStoreFailure) in try tables.currentRecord(key) }
    }

    package func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?)
        async throws(NotificationStoreFailure) -> CurrentRead
    {
        try await read { tables throws(NotificationStoreFailure) in try tables.currentRecord(key, unlessStamped: stamp)
        }
    }

    package func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    {
        if appAccountToken.isEmpty { return CustomerView(subscriptions: [], purchases: []) }
        return try await read { tables throws(NotificationStoreFailure) in
            CustomerView(
                subscriptions: try tables.records(
                    bundleId: bundleId, environment: environment, appAccountToken: appAccountToken),
                purchases: try tables.purchases(
                    bundleId: bundleId, environment: environment, where: .appAccountToken, is: appAccountToken))
        }
    }

    package func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
        try await read { tables throws(NotificationStoreFailure) in
            CustomerView(
                subscriptions: try tables.record(key).map { [$0] } ?? [],
                purchases: try tables.purchases(
                    bundleId: key.bundleId, environment: key.environment, where: .originalTransactionId,
                    is: key.originalTransactionId))
        }
    }

    package func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
        try await read { tables throws(NotificationStoreFailure) in try tables.projectedThrough() }
    }

    package func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
        try await write { tables throws(NotificationStoreFailure) in try tables.setProjectedThrough(position) }
    }

    /// Number of records: a full `count(*)` of `subscription_records`, for state-seed and tests (no request path
    /// or metric asks for it).
    package func recordCount() async throws(NotificationStoreFailure) -> Int {
        try await read { tables throws(NotificationStoreFailure) in try tables.recordCount() }
    }

    package func removeAll() async throws(NotificationStoreFailure) {
        try await write { tables throws(NotificationStoreFailure) in try tables.removeAll() }
    }

    /// Runs `work` in one read transaction on the read connection.
    private func read<Value: Sendable>(
        _ work: @escaping @Sendable (SQLiteSubscriptionTables) throws(NotificationStoreFailure) -> Value
    ) async throws(NotificationStoreFailure) -> Value {
        let limits = self.limits
        return try await reader.run { database throws(NotificationStoreFailure) in
            try database.inTransaction(.read) { () throws(NotificationStoreFailure) in
                try work(SQLiteSubscriptionTables(database: database, limits: limits))
            }
        }
    }

    /// Runs `work` in one write transaction on the notification store's connection.
    private func write(_ work: @escaping @Sendable (SQLiteSubscriptionTables) throws(NotificationStoreFailure) -> Void)
        async throws(NotificationStoreFailure)
    {
        let limits = self.limits
        try await writer.run { database throws(NotificationStoreFailure) in
            try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
                try work(SQLiteSubscriptionTables(database: database, limits: limits))
            }
        }
    }
}
