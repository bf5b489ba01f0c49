import GatewayFoundation
import ProtoCodec
import SubscriptionState

/// The subscription state in memory, with `SQLiteSubscriptionStore`'s semantics (the same folds, limits,
/// orders and failures): for tests of the layers above, and for a process whose notification store keeps no
/// state. Lost when the process ends; never blocks on I/O (each call holds one lock briefly).
package final class MemorySubscriptionStore: SubscriptionStore {
    private let state = Lock(State())
    private let limits: SubscriptionStoreLimits
    package let eventSignal = LiveSignal()

    /// An empty state bounded by `limits`.
    package init(limits: SubscriptionStoreLimits = .defaults) {
        self.limits = limits
    }

    /// Where a customer's records and purchases are found: an app, an environment and one token or id.
    private struct CustomerKey: Hashable {
        var bundleId: String
        var environment: Environment
        var value: String
    }

    private struct State {
        var records: [SubscriptionKey: SubscriptionRecord] = [:]
        /// The records of each non-empty customer token.
        var recordsByToken: [CustomerKey: Set<SubscriptionKey>] = [:]
        var purchases: [PurchaseKey: StoredPurchase] = [:]
        var purchasesByToken: [CustomerKey: Set<PurchaseKey>] = [:]
        var purchasesByOriginal: [CustomerKey: Set<PurchaseKey>] = [:]
        var position = StorePosition.zero
        /// The event cursors and events: kept by `removeAll`, as the SQLite store keeps them.
        var events = Events()

        struct Events {
            var cursors: [SubscriptionKey: Cursor] = [:]
            var kept: [(bundleId: String, stored: StoredSubscriptionEvent)] = []
            var lastPosition: Int64 = 0
            var prunedThrough: Int64 = 0
        }

        struct Cursor {
            var cursor: SubscriptionEventCursor
            var nextTransition: Int64?
        }

        mutating func store(_ record: SubscriptionRecord) {
            let key = record.key
            if let held = records[key] { unindex(held) }
            records[key] = record
            let token = SubscriptionFold.facts(of: record).appAccountToken
            if !token.isEmpty { recordsByToken[Self.customer(key, token), default: []].insert(key) }
        }

        private mutating func unindex(_ record: SubscriptionRecord) {
            let token = SubscriptionFold.facts(of: record).appAccountToken
            if !token.isEmpty { Self.remove(record.key, at: Self.customer(record.key, token), from: &recordsByToken) }
        }

        mutating func store(_ stored: StoredPurchase) {
            let payload = stored.purchase.payload
            let key = stored.key
            if let held = purchases[key] {
                let old = held.purchase.payload
                if !old.appAccountToken.isEmpty {
                    Self.remove(key, at: Self.customer(key, old.appAccountToken), from: &purchasesByToken)
                }
                Self.remove(key, at: Self.customer(key, old.originalTransactionId), from: &purchasesByOriginal)
            }
            purchases[key] = stored
            if !payload.appAccountToken.isEmpty {
                purchasesByToken[Self.customer(key, payload.appAccountToken), default: []].insert(key)
            }
            purchasesByOriginal[Self.customer(key, payload.originalTransactionId), default: []].insert(key)
        }

        private static func customer(_ key: SubscriptionKey, _ value: String) -> CustomerKey {
            CustomerKey(bundleId: key.bundleId, environment: key.environment, value: value)
        }

        private static func customer(_ key: PurchaseKey, _ value: String) -> CustomerKey {
            CustomerKey(bundleId: key.bundleId, environment: key.environment, value: value)
        }

        private static func remove<Member>(
            _ member: Member, at key: CustomerKey, from index: inout [CustomerKey: Set<Member>]
        ) {
            index[key]?.remove(member)
            if index[key]?.isEmpty == true { index[key] = nil }
        }
    }

    package func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    {
        let limits = self.limits
        let applied = try state.withLock { state throws(NotificationStoreFailure) -> [AppliedChange] in
            // Folded into a copy first: a change that fails leaves the state as it was, as a rolled-back
            // transaction does.
            var pendingRecords: [SubscriptionKey: SubscriptionRecord] = [:]
            var pendingPurchases: [PurchaseKey: StoredPurchase] = [:]
            var events = state.events
            var applied: [AppliedChange] = []
            for change in changes {
                switch change.destination {
                case .ignored:
                    applied.append(AppliedChange(record: nil, purchase: nil, changed: false))
                case .purchase:
                    guard let snapshot = change.transaction else {
                        applied.append(AppliedChange(record: nil, purchase: nil, changed: false))
                        continue
                    }
                    let payload = snapshot.payload
                    let key = PurchaseKey(
                        bundleId: change.key.bundleId, environment: change.key.environment,
                        transactionId: payload.transactionId)
                    let (newest, changed) = SubscriptionFold.purchase(
                        (pendingPurchases[key] ?? state.purchases[key])?.purchase, snapshot)
                    if changed {
                        pendingPurchases[key] = StoredPurchase(
                            purchase: newest, updatedAtMillis: change.nowMillis, source: change.source)
                    }
                    var made: [SubscriptionEvent] = []
                    if changed, let context = change.events {
                        made = Self.record(&events, SubscriptionKey(of: newest.payload)) {
                            SubscriptionEventMaker.events(
                                ofPurchase: newest, after: $0, at: change.nowMillis, context: context,
                                newEventID: SubscriptionEventIDs.random)
                        }
                    }
                    applied.append(AppliedChange(record: nil, purchase: newest, changed: changed, events: made))
                case .subscription:
                    let held = pendingRecords[change.key] ?? state.records[change.key]
                    let outcome = try SubscriptionFold.record(held, change, limits: limits)
                    if outcome.changed { pendingRecords[change.key] = outcome.record }
                    var made: [SubscriptionEvent] = []
                    if outcome.changed, let context = change.events {
                        made = Self.record(&events, change.key) {
                            SubscriptionEventMaker.events(
                                of: outcome.record, after: $0, at: change.nowMillis, context: context,
                                newEventID: SubscriptionEventIDs.random)
                        }
                    }
                    applied.append(
                        AppliedChange(record: outcome.record, purchase: nil, changed: outcome.changed, events: made))
                }
            }
            for record in pendingRecords.values { state.store(record) }
            for purchase in pendingPurchases.values { state.store(purchase) }
            if let position { state.position = position }
            state.events = events
            return applied
        }
        if applied.contains(where: { !$0.events.isEmpty }) { eventSignal.raise() }
        return applied
    }

    /// Moves `key`'s cursor by `make` and keeps the events it made.
    private static func record(
        _ events: inout State.Events, _ key: SubscriptionKey,
        make: (SubscriptionEventCursor?) -> SubscriptionEventMaker.Outcome
    ) -> [SubscriptionEvent] {
        let outcome = make(events.cursors[key]?.cursor)
        events.cursors[key] = State.Cursor(cursor: outcome.cursor, nextTransition: outcome.nextTransitionMillis)
        for event in outcome.events {
            events.lastPosition += 1
            events.kept.append((key.bundleId, StoredSubscriptionEvent(position: events.lastPosition, event: event)))
        }
        return outcome.events
    }

    package func advance(_ key: SubscriptionKey, context: SubscriptionEventContext, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> [SubscriptionEvent]
    {
        let made = state.withLock { state -> [SubscriptionEvent] in
            guard let record = state.records[key] else {
                state.events.cursors[key]?.nextTransition = nil
                return []
            }
            return Self.record(&state.events, key) {
                SubscriptionEventMaker.events(
                    of: record, after: $0, at: nowMillis, context: context, newEventID: SubscriptionEventIDs.random)
            }
        }
        if !made.isEmpty { eventSignal.raise() }
        return made
    }

    package func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
        async throws(NotificationStoreFailure) -> [SubscriptionKey]
    {
        let apps = Set(bundleIds)
        return state.withLock { state in
            state.events.cursors.compactMap { key, cursor -> (Int64, SubscriptionKey)? in
                guard let next = cursor.nextTransition, next <= nowMillis, apps.contains(key.bundleId) else {
                    return nil
                }
                return (next, key)
            }
            .sorted { $0.0 < $1.0 }.prefix(max(0, limit)).map(\.1)
        }
    }

    package func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64? {
        let apps = Set(bundleIds)
        return state.withLock { state in
            state.events.cursors.compactMap { key, cursor in apps.contains(key.bundleId) ? cursor.nextTransition : nil }
                .min()
        }
    }

    package func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    {
        func order(_ key: SubscriptionKey) -> (String, String, String) {
            (key.bundleId, AppleNames.environment(key.environment), key.originalTransactionId)
        }
        return state.withLock { state in
            state.records.keys.filter { key == nil || order($0) > order(key!) }.sorted { order($0) < order($1) }
                .prefix(max(0, limit)).map { $0 }
        }
    }

    package func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredPurchase]
    {
        // The SQLite store's order: its text columns compare as UTF-8 bytes.
        func precedes(_ a: PurchaseKey, _ b: PurchaseKey) -> Bool {
            let left = [a.bundleId, AppleNames.environment(a.environment), a.transactionId]
            let right = [b.bundleId, AppleNames.environment(b.environment), b.transactionId]
            for (x, y) in zip(left, right) where !x.utf8.elementsEqual(y.utf8) {
                return x.utf8.lexicographicallyPrecedes(y.utf8)
            }
            return false
        }
        return state.withLock { state in
            state.purchases.filter { held, _ in key.map { precedes($0, held) } ?? true }
                .sorted { precedes($0.key, $1.key) }.prefix(max(0, limit)).map(\.value)
        }
    }

    package func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    {
        state.withLock { state in
            Array(
                state.events.kept.lazy.filter { $0.stored.position > position }
                    .filter { bundleId == nil || $0.bundleId == bundleId }.map(\.stored)
                    .prefix(max(0, limit)))
        }
    }

    package func lastEventPosition() async throws(NotificationStoreFailure) -> Int64 {
        state.withLock { $0.events.lastPosition }
    }

    package func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int {
        state.withLock { state in
            let old = { (entry: (bundleId: String, stored: StoredSubscriptionEvent)) in
                (entry.stored.event.occurredAt?.unixMilliseconds ?? 0) < millis
            }
            if let newest = state.events.kept.filter(old).map(\.stored.position).max() {
                state.events.prunedThrough = max(state.events.prunedThrough, newest)
            }
            let before = state.events.kept.count
            state.events.kept.removeAll(where: old)
            return before - state.events.kept.count
        }
    }

    package func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64 {
        state.withLock { $0.events.prunedThrough }
    }

    package func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        state.withLock { $0.records[key] }
    }

    package func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    {
        if appAccountToken.isEmpty { return CustomerView(subscriptions: [], purchases: []) }
        let key = CustomerKey(bundleId: bundleId, environment: environment, value: appAccountToken)
        let limits = self.limits
        let (records, purchases) = try state.withLock {
            state throws(NotificationStoreFailure) -> ([SubscriptionRecord], [SignedTransaction]) in
            let records = (state.recordsByToken[key] ?? []).compactMap { state.records[$0] }
            let purchases = (state.purchasesByToken[key] ?? []).compactMap { state.purchases[$0]?.purchase }
            try Self.check(records: records, purchases: purchases, limits: limits)
            return (records, purchases)
        }
        return CustomerView(
            subscriptions: records.sorted { $0.key.originalTransactionId < $1.key.originalTransactionId },
            purchases: purchases)
    }

    package func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
        let original = CustomerKey(
            bundleId: key.bundleId, environment: key.environment, value: key.originalTransactionId)
        let limits = self.limits
        let (record, purchases) = try state.withLock {
            state throws(NotificationStoreFailure) -> (SubscriptionRecord?, [SignedTransaction]) in
            let record = state.records[key]
            let purchases = (state.purchasesByOriginal[original] ?? []).compactMap { state.purchases[$0]?.purchase }
            try Self.check(records: record.map { [$0] } ?? [], purchases: purchases, limits: limits)
            return (record, purchases)
        }
        return CustomerView(subscriptions: record.map { [$0] } ?? [], purchases: purchases)
    }

    /// The SQLite store's read limits, so both fail alike.
    private static func check(
        records: [SubscriptionRecord], purchases: [SignedTransaction], limits: SubscriptionStoreLimits
    ) throws(NotificationStoreFailure) {
        if records.count > limits.recordsPerCustomer {
            throw NotificationStoreFailure(
                "subscription store: the customer has more than \(limits.recordsPerCustomer) subscriptions",
                kind: .limitExceeded)
        }
        if records.reduce(0, { $0 + $1.transactions.count }) > limits.transactionsPerRead {
            throw NotificationStoreFailure(
                "subscription store: the customer's records hold more than \(limits.transactionsPerRead) "
                    + "transactions", kind: .limitExceeded)
        }
        if purchases.count > limits.purchasesPerCustomer {
            throw NotificationStoreFailure(
                "subscription store: the customer has more than \(limits.purchasesPerCustomer) purchases",
                kind: .limitExceeded)
        }
    }

    package func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
        state.withLock { $0.position }
    }

    package func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
        state.withLock { $0.position = position }
    }

    package func removeAll() async throws(NotificationStoreFailure) {
        state.withLock { state in
            let events = state.events
            state = State()
            state.events = events
        }
    }
}
