import SubscriptionState

/// A subscription record's row without its ledger, as every store reads it back (SQLite and PostgreSQL store the
/// same columns).
struct RecordBookkeeping {
    var version: UInt64
    var updatedAtMillis: Int64
    var source: SnapshotSource
    var renewalInfo: SignedRenewalInfo?

    /// The record of `key` from this row and its ledger, filed by the reducer's own rules; `.corrupt` when a
    /// snapshot names another subscription.
    func record(_ key: SubscriptionKey, transactions: [SignedTransaction]) throws(NotificationStoreFailure)
        -> SubscriptionRecord
    {
        do {
            return try SubscriptionRecord(
                restoring: key, transactions: transactions, renewalInfo: renewalInfo, version: version,
                updatedAtMillis: updatedAtMillis, source: source)
        } catch {
            throw NotificationStoreFailure(
                "subscription store: the record \(key.originalTransactionId.prefix(40)) holds a snapshot of another "
                    + "subscription: \(error)", kind: .corrupt)
        }
    }
}
