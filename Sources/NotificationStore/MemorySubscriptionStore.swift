import GatewayFoundation
import ProtoCodec
import SubscriptionState

/// The subscription state in memory, with `SQLiteSubscriptionStore`'s semantics (the same folds, limits,
/// orders and failures): for tests of the layers above, and for a process whose notification store keeps no
/// state. Lost when the process ends; never blocks on I/O (each call holds one lock briefly).
public final class MemorySubscriptionStore: SubscriptionStore {
    private let state = Lock(State())
    private let limits: SubscriptionStoreLimits

    /// An empty state bounded by `limits`.
    public init(limits: SubscriptionStoreLimits = .defaults) {
        self.limits = limits
    }

    /// Where a customer's records and purchases are found: an app, an environment and one token or id.
    private struct CustomerKey: Hashable {
        var bundleId: String
        var environment: Environment
        var value: String
    }

    /// A purchase's identity: its app, environment and transaction id.
    private struct PurchaseKey: Hashable {
        var bundleId: String
        var environment: Environment
        var transactionId: String
    }

    private struct State {
        var records: [SubscriptionKey: SubscriptionRecord] = [:]
        /// The records of each non-empty customer token.
        var recordsByToken: [CustomerKey: Set<SubscriptionKey>] = [:]
        var purchases: [PurchaseKey: SignedTransaction] = [:]
        var purchasesByToken: [CustomerKey: Set<PurchaseKey>] = [:]
        var purchasesByOriginal: [CustomerKey: Set<PurchaseKey>] = [:]
        var position = StorePosition.zero

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

        mutating func store(_ purchase: SignedTransaction) {
            let payload = purchase.payload
            let key = PurchaseKey(
                bundleId: payload.bundleId, environment: payload.environment, transactionId: payload.transactionId)
            if let held = purchases[key] {
                let old = held.payload
                if !old.appAccountToken.isEmpty {
                    Self.remove(key, at: Self.customer(key, old.appAccountToken), from: &purchasesByToken)
                }
                Self.remove(key, at: Self.customer(key, old.originalTransactionId), from: &purchasesByOriginal)
            }
            purchases[key] = purchase
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

    public func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    {
        let limits = self.limits
        return try state.withLock { state throws(NotificationStoreFailure) -> [AppliedChange] in
            // Folded into a copy first: a change that fails leaves the state as it was, as a rolled-back
            // transaction does.
            var pendingRecords: [SubscriptionKey: SubscriptionRecord] = [:]
            var pendingPurchases: [PurchaseKey: SignedTransaction] = [:]
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
                        pendingPurchases[key] ?? state.purchases[key], snapshot)
                    if changed { pendingPurchases[key] = newest }
                    applied.append(AppliedChange(record: nil, purchase: newest, changed: changed))
                case .subscription:
                    let held = pendingRecords[change.key] ?? state.records[change.key]
                    let outcome = try SubscriptionFold.record(held, change, limits: limits)
                    if outcome.changed { pendingRecords[change.key] = outcome.record }
                    applied.append(AppliedChange(record: outcome.record, purchase: nil, changed: outcome.changed))
                }
            }
            for record in pendingRecords.values { state.store(record) }
            for purchase in pendingPurchases.values { state.store(purchase) }
            if let position { state.position = position }
            return applied
        }
    }

    public func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        state.withLock { $0.records[key] }
    }

    public func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    {
        if appAccountToken.isEmpty { return CustomerView(subscriptions: [], purchases: []) }
        let key = CustomerKey(bundleId: bundleId, environment: environment, value: appAccountToken)
        let limits = self.limits
        let (records, purchases) = try state.withLock {
            state throws(NotificationStoreFailure) -> ([SubscriptionRecord], [SignedTransaction]) in
            let records = (state.recordsByToken[key] ?? []).compactMap { state.records[$0] }
            let purchases = (state.purchasesByToken[key] ?? []).compactMap { state.purchases[$0] }
            try Self.check(records: records, purchases: purchases, limits: limits)
            return (records, purchases)
        }
        return CustomerView(
            subscriptions: records.sorted { $0.key.originalTransactionId < $1.key.originalTransactionId },
            purchases: purchases)
    }

    public func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
        let original = CustomerKey(
            bundleId: key.bundleId, environment: key.environment, value: key.originalTransactionId)
        let limits = self.limits
        let (record, purchases) = try state.withLock {
            state throws(NotificationStoreFailure) -> (SubscriptionRecord?, [SignedTransaction]) in
            let record = state.records[key]
            let purchases = (state.purchasesByOriginal[original] ?? []).compactMap { state.purchases[$0] }
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

    public func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
        state.withLock { $0.position }
    }

    public func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
        state.withLock { $0.position = position }
    }

    public func removeAll() async throws(NotificationStoreFailure) {
        state.withLock { $0 = State() }
    }
}
