import Postgres
import ProtoCodec
import SubscriptionState

extension PostgresSubscriptionStore {
    /// What one apply's transaction holds: the rows of the keys it locked, read together in one round trip
    /// (`load`) and kept current in memory as its changes fold, and the writes that follow them, sent together at
    /// the end (`flush`). A batch of changes therefore costs a few round trips, not a few per change; the server
    /// still sees every statement in order, so it ends in the state the changes made one by one.
    ///
    /// Use it only inside the transaction it was made for, with the advisory locks of every key it reads held.
    final class ApplyScope {
        let transaction: PostgresTransaction
        let store: PostgresSubscriptionStore
        /// Per key read: its record (nil: none stored).
        private var records: [SubscriptionKey: SubscriptionRecord?] = [:]
        private var purchases: [PurchaseKey: SignedTransaction?] = [:]
        private var cursors: [SubscriptionKey: SubscriptionEventCursor?] = [:]
        /// The writes not sent yet, in order, and which of them must touch exactly one row (an UPDATE of a row
        /// read `FOR UPDATE`), with what it updates.
        private var writes: [PostgresQuery] = []
        private var updates: [(index: Int, what: String)] = []

        init(_ transaction: PostgresTransaction, store: PostgresSubscriptionStore) {
            self.transaction = transaction
            self.store = store
        }

        /// Takes the advisory locks of `changes`' keys and reads every row they touch, all in one round trip
        /// (the server runs the reads after the locks). The locks are taken sorted: every transaction takes its
        /// locks in this one order, so two batches never wait on each other in a cycle.
        func load(_ changes: [SubscriptionChange]) async throws {
            var locks: Set<Int64> = []
            var recordKeys: [SubscriptionKey] = []
            var cursorKeys: [SubscriptionKey] = []
            var purchaseKeys: [PurchaseKey] = []
            var seenRecords: Set<SubscriptionKey> = []
            var seenCursors: Set<SubscriptionKey> = []
            var seenPurchases: Set<PurchaseKey> = []
            for change in changes {
                switch change.destination {
                case .ignored: break
                case .subscription:
                    if seenRecords.insert(change.key).inserted {
                        recordKeys.append(change.key)
                        locks.insert(PostgresSubscriptionStore.lockKey(change.key))
                    }
                    if change.events != nil, seenCursors.insert(change.key).inserted { cursorKeys.append(change.key) }
                case .purchase:
                    guard let payload = change.transaction?.payload else { break }
                    let key = PurchaseKey(
                        bundleId: payload.bundleId, environment: payload.environment,
                        transactionId: payload.transactionId)
                    let owner = SubscriptionKey(of: payload)
                    if seenPurchases.insert(key).inserted {
                        purchaseKeys.append(key)
                        locks.insert(PostgresSubscriptionStore.lockKey(key))
                        locks.insert(PostgresSubscriptionStore.lockKey(owner))
                    }
                    if change.events != nil, seenCursors.insert(owner).inserted { cursorKeys.append(owner) }
                }
            }
            try await load(locks: locks.sorted(), records: recordKeys, cursors: cursorKeys, purchases: purchaseKeys)
        }

        /// Takes `locks` (sorted) and reads the rows of the given keys, in one round trip.
        func load(
            locks: [Int64], records recordKeys: [SubscriptionKey], cursors cursorKeys: [SubscriptionKey] = [],
            purchases purchaseKeys: [PurchaseKey] = []
        ) async throws {
            var queries: [PostgresQuery] = []
            if let lock = PostgresSubscriptionStore.lockQuery(locks) { queries.append(lock) }
            let first = queries.count
            for key in recordKeys { queries += store.recordQueries(key) }
            for key in cursorKeys { queries.append(PostgresSubscriptionStore.cursorQuery(key)) }
            for key in purchaseKeys { queries.append(PostgresSubscriptionStore.purchaseQuery(key)) }
            let rows = try await transaction.queries(queries)
            var next = first
            for key in recordKeys {
                records[key] = try store.record(key, row: rows[next], ledger: rows[next + 1])
                next += 2
            }
            for key in cursorKeys {
                cursors[key] = try store.cursor(key, rows[next])
                next += 1
            }
            for key in purchaseKeys {
                purchases[key] = try rows[next].first.map { row throws(NotificationStoreFailure) in
                    try store.purchase(row, from: 0, bundleId: key.bundleId, environment: key.environment)
                }
                next += 1
            }
        }

        /// The record of `key` as this transaction left it (read now if `load` did not).
        func record(_ key: SubscriptionKey) async throws -> SubscriptionRecord? {
            if let held = records[key] { return held }
            try await load(locks: [], records: [key])
            return records[key] ?? nil
        }

        func purchase(_ key: PurchaseKey) async throws -> SignedTransaction? {
            if let held = purchases[key] { return held }
            try await load(locks: [], records: [], purchases: [key])
            return purchases[key] ?? nil
        }

        func cursor(_ key: SubscriptionKey) async throws -> SubscriptionEventCursor? {
            if let held = cursors[key] { return held }
            try await load(locks: [], records: [], cursors: [key])
            return cursors[key] ?? nil
        }

        /// Queues `query`, which writes what is now `record` (or the purchase, or the cursor) in memory.
        func write(_ query: PostgresQuery, updatingOneRowOf what: String? = nil) {
            if let what { updates.append((writes.count, what)) }
            writes.append(query)
        }

        func remember(_ record: SubscriptionRecord) { records[record.key] = record }
        func remember(_ purchase: SignedTransaction, as key: PurchaseKey) { purchases[key] = purchase }
        func remember(_ cursor: SubscriptionEventCursor, of key: SubscriptionKey) { cursors[key] = cursor }

        /// Sends the queued writes and then `after`, together, and returns `after`'s rows (nil without it).
        func flush(then after: PostgresQuery? = nil) async throws -> PostgresRows? {
            let queries = writes + (after.map { [$0] } ?? [])
            let updates = updates
            writes = []
            self.updates = []
            if queries.isEmpty { return nil }
            let rows = try await transaction.queries(queries)
            // The rows were read FOR UPDATE in this transaction: nobody could delete them since.
            for (index, what) in updates where rows[index].affectedRows != 1 {
                throw PostgresSubscriptionStore.corrupt("\(what) vanished while applying")
            }
            return after == nil ? nil : rows.last
        }
    }
}
