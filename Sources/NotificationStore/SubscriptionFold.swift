import ProtoCodec
import SubscriptionState

/// What one change does to what a store holds, decided the same way by every store: the reducer folds, this
/// says what to write.
enum SubscriptionFold {
    /// A record after a change, and what of it must be written.
    struct RecordOutcome {
        var record: SubscriptionRecord
        /// Whether the record changed (its version grew).
        var changed: Bool
        /// The transaction snapshot the ledger filed (newer than the one it held), if any.
        var filedTransaction: SignedTransaction?
        /// Whether the renewal info was replaced.
        var renewalChanged: Bool
        /// Whether no record was stored before.
        var isNew: Bool
    }

    /// Folds `change` into `held` (nil: none stored yet). Fails when the ledger would outgrow `limits`.
    static func record(_ held: SubscriptionRecord?, _ change: SubscriptionChange, limits: SubscriptionStoreLimits)
        throws(NotificationStoreFailure) -> RecordOutcome
    {
        var record = held ?? SubscriptionRecord(key: change.key)
        let changed: Bool
        do {
            changed = try record.apply(
                transaction: change.transaction, renewalInfo: change.renewalInfo, source: change.source,
                nowMillis: change.nowMillis)
        } catch {
            // SubscriptionChange's init ran the same checks against the same key; a stored record of that key
            // refusing it means the stored record is not what it claims.
            throw NotificationStoreFailure(
                "subscription store: the record \(change.key.originalTransactionId) refused a checked change: "
                    + "\(error)", kind: .corrupt)
        }
        if record.transactions.count > limits.transactionsPerRead {
            throw NotificationStoreFailure(
                "subscription store: the record \(change.key.originalTransactionId) would hold more than "
                    + "\(limits.transactionsPerRead) transactions", kind: .limitExceeded)
        }
        var filed: SignedTransaction?
        if let id = change.transaction?.payload.transactionId, record.transactions[id] != held?.transactions[id] {
            filed = record.transactions[id]
        }
        return RecordOutcome(
            record: record, changed: changed, filedTransaction: filed,
            renewalChanged: record.renewalInfo != held?.renewalInfo, isNew: held == nil)
    }

    /// The newest of a held purchase snapshot and `snapshot`, and whether that is `snapshot` (to be written).
    static func purchase(_ held: SignedTransaction?, _ snapshot: SignedTransaction) -> (
        newest: SignedTransaction, changed: Bool
    ) {
        if let held, !snapshot.supersedes(held) { return (held, false) }
        return (snapshot, true)
    }

    /// The facts of `record` that do not depend on the instant or the policy (product, dates, auto-renew,
    /// ownership, app account token), as the reducer derives them: what a store indexes and shows analysts.
    static func facts(of record: SubscriptionRecord) -> DerivedSubscription {
        record.state(at: record.updatedAtMillis, policy: .defaults)
    }
}

/// Apple's names of the values a store writes as text, so the file reads as Apple's documentation does (`package`:
/// the state's export writes the same names as the analysts' view).
package enum AppleNames {
    /// "Production", "Sandbox", "Xcode", "LocalTesting"; "" for none, the number for one this release does not
    /// know.
    package static func environment(_ environment: Environment) -> String {
        switch environment {
        case .production: "Production"
        case .sandbox: "Sandbox"
        case .xcode: "Xcode"
        case .localTesting: "LocalTesting"
        case .unspecified: ""
        case .unrecognized(let number): "\(number)"
        }
    }

    /// The environment `environment(_:)` wrote; nil for "" and names it never writes.
    static func environment(named name: String) -> Environment? {
        switch name {
        case "Production": .production
        case "Sandbox": .sandbox
        case "Xcode": .xcode
        case "LocalTesting": .localTesting
        default: Int32(name).map { Environment(rawValue: $0) }
        }
    }

    /// "PURCHASED", "FAMILY_SHARED"; else the string Apple sent.
    package static func ownership(_ transaction: Transaction) -> String {
        switch transaction.inAppOwnershipType {
        case .purchased: "PURCHASED"
        case .familyShared: "FAMILY_SHARED"
        default: transaction.inAppOwnershipTypeRaw
        }
    }

    /// Apple's `type` string ("Non-Consumable", "Non-Renewing Subscription", …).
    static func productType(_ transaction: Transaction) -> String {
        if !transaction.typeRaw.isEmpty { return transaction.typeRaw }
        switch transaction.type {
        case .autoRenewable: return "Auto-Renewable Subscription"
        case .nonConsumable: return "Non-Consumable"
        case .consumable: return "Consumable"
        case .nonRenewable: return "Non-Renewing Subscription"
        default: return ""
        }
    }

    /// A date field in UNIX ms: Apple's exact milliseconds when set, else the Timestamp's; nil when absent.
    static func millis(_ timestamp: ProtoTimestamp?, exact: Int64) -> Int64? {
        if exact != 0 { return exact }
        guard let timestamp else { return nil }
        let (scaled, overflow) = timestamp.seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return timestamp.seconds < 0 ? .min : .max }
        let (sum, overflowed) = scaled.addingReportingOverflow(Int64(timestamp.nanos / 1_000_000))
        return overflowed ? .max : sum
    }
}
