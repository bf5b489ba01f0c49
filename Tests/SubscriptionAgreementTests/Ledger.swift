import ProtoCodec
import SubscriptionState

/// What a store keeps of the deliveries it applied, as the gateway's state will: one `SubscriptionRecord` per
/// (bundle id, environment, original transaction id) for auto-renewable subscriptions (a family member's record is
/// its own), and the newest snapshot of each one-time purchase.
struct Ledger {
    private(set) var records: [SubscriptionKey: SubscriptionRecord] = [:]
    private(set) var purchases: [String: SignedTransaction] = [:]

    /// Folds one delivery in: an auto-renewable's into its record, any other product's among the purchases.
    mutating func deliver(_ delivery: Delivery, source: SnapshotSource, nowMillis: Int64) throws(SnapshotRefusal) {
        let payload = delivery.transaction.payload
        guard payload.type == .autoRenewable else {
            if let held = purchases[payload.transactionId], !delivery.transaction.supersedes(held) { return }
            purchases[payload.transactionId] = delivery.transaction
            return
        }
        let key = SubscriptionKey(
            bundleId: payload.bundleId, environment: payload.environment,
            originalTransactionId: payload.originalTransactionId)
        try records[key, default: SubscriptionRecord(key: key)].apply(
            transaction: delivery.transaction, renewalInfo: delivery.renewalInfo, source: source, nowMillis: nowMillis)
    }

    /// Everything the ledger holds but the bookkeeping (version, update time, source).
    var snapshots: Snapshots {
        Snapshots(
            records: records.mapValues { Snapshots.Held(transactions: $0.transactions, renewalInfo: $0.renewalInfo) },
            purchases: purchases)
    }

    /// The snapshots of a ledger: what must not depend on the order deliveries arrived in.
    struct Snapshots: Equatable {
        struct Held: Equatable {
            var transactions: [String: SignedTransaction]
            var renewalInfo: SignedRenewalInfo?
        }

        var records: [SubscriptionKey: Held]
        var purchases: [String: SignedTransaction]
    }

    /// The customers: the purchaser (their own subscriptions and every one-time purchase) and each family member
    /// (the subscription shared with them), by the ownership of each record's current transaction.
    var customers: [CustomerView] {
        let ordered = records.values.sorted { $0.key.originalTransactionId < $1.key.originalTransactionId }
        let shared = ordered.filter { $0.currentTransaction?.payload.inAppOwnershipType == .familyShared }
        let own = ordered.filter { $0.currentTransaction?.payload.inAppOwnershipType != .familyShared }
        return [CustomerView(subscriptions: own, purchases: Array(purchases.values))]
            + shared.map { CustomerView(subscriptions: [$0], purchases: []) }
    }
}
