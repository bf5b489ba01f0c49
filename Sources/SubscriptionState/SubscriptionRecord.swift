import ProtoCodec

/// Everything the gateway knows of one auto-renewable subscription (one app, environment and
/// `originalTransactionId`), folded from Apple's signed snapshots in any order.
///
/// The record is a ledger, not a log: per `transactionId` it keeps that transaction's newest snapshot by
/// `signedDate`, and the newest renewal info by `signedDate` (Apple: "if you process multiple notifications for
/// the same transaction ID, use the notification with the most recent signedDate"; a retry keeps its
/// `signedDate`). Two different snapshots signed in the same millisecond resolve by their JWS bytes. The newest of
/// a set does not depend on the order the set arrived in, so neither does anything derived from the ledger.
/// What the record says at an instant is `state(at:policy:)`.
package struct SubscriptionRecord: Sendable, Hashable {
    /// The app, environment and subscription every snapshot of this record must name.
    package let key: SubscriptionKey
    /// Each transaction's newest snapshot, by `transactionId`: the current period, earlier periods (a refund of
    /// one arrives as such a snapshot), upgraded-away products.
    package private(set) var transactions: [String: SignedTransaction]
    /// The newest renewal info: the next renewal, auto-renew, billing retry and grace.
    package private(set) var renewalInfo: SignedRenewalInfo?
    /// Grows by one with every change (never on a duplicate or older snapshot); 0 for an empty record.
    package private(set) var version: UInt64
    /// The `nowMillis` of the last change (0 for an empty record).
    package private(set) var updatedAtMillis: Int64
    /// Who brought the last change; nil for an empty record.
    package private(set) var source: SnapshotSource?

    /// An empty record for `key`, at version 0.
    package init(key: SubscriptionKey) {
        self.key = key
        self.transactions = [:]
        self.renewalInfo = nil
        self.version = 0
        self.updatedAtMillis = 0
        self.source = nil
    }

    /// A record as a store saved it: its snapshots (filed as `apply` would, so duplicates and older snapshots
    /// fold away) and the bookkeeping of its last change. Refuses a snapshot of another subscription.
    package init(
        restoring key: SubscriptionKey, transactions: [SignedTransaction], renewalInfo: SignedRenewalInfo?,
        version: UInt64, updatedAtMillis: Int64, source: SnapshotSource?
    ) throws(SnapshotRefusal) {
        self.init(key: key)
        for transaction in transactions {
            try check(transaction)
            file(transaction)
        }
        if let renewalInfo {
            try check(renewalInfo)
            file(renewalInfo)
        }
        self.version = version
        self.updatedAtMillis = updatedAtMillis
        self.source = source
    }

    /// Folds a transaction snapshot and a renewal-info snapshot (either may be nil) into the record, as one change.
    ///
    /// A snapshot replaces what the record holds only when it `supersedes` it (newer `signedDate`); an older or
    /// duplicate one changes nothing. When anything changed, `version` grows by one and `updatedAtMillis` and
    /// `source` record the change. Returns whether anything changed.
    ///
    /// Throws, changing nothing, when either snapshot names another app, environment or `originalTransactionId`
    /// than `key`, or the transaction has no `transactionId`.
    @discardableResult
    package mutating func apply(
        transaction: SignedTransaction? = nil, renewalInfo: SignedRenewalInfo? = nil,
        source: SnapshotSource, nowMillis: Int64
    ) throws(SnapshotRefusal) -> Bool {
        if let transaction { try check(transaction) }
        if let renewalInfo { try check(renewalInfo) }
        var changed = false
        if let transaction { changed = file(transaction) || changed }
        if let renewalInfo { changed = file(renewalInfo) || changed }
        if changed {
            version &+= 1
            updatedAtMillis = nowMillis
            self.source = source
        }
        return changed
    }

    /// The transaction that holds the subscription now, chosen by its own dates, never by arrival: the latest
    /// `purchaseDate` among transactions not upgraded away (ties: the later `expiresDate`, then the larger
    /// `transactionId`). A refund of an earlier period, signed after the current one, is not current. When every
    /// known transaction was upgraded away (the upgrade's own transaction is not known yet), the latest of them.
    package var currentTransaction: SignedTransaction? {
        let kept = transactions.values.filter { !$0.payload.isUpgraded }
        let pool = kept.isEmpty ? Array(transactions.values) : kept
        return pool.max { Self.holdsBefore($0.payload, $1.payload) }
    }

    /// Whether `a` held the subscription before `b`: the order `currentTransaction` takes the last of.
    static func holdsBefore(_ a: Transaction, _ b: Transaction) -> Bool {
        let (purchasedA, purchasedB) = (a.purchasedAt ?? .min, b.purchasedAt ?? .min)
        if purchasedA != purchasedB { return purchasedA < purchasedB }
        let (expiresA, expiresB) = (a.expiresAt ?? .min, b.expiresAt ?? .min)
        if expiresA != expiresB { return expiresA < expiresB }
        if a.transactionId.utf8.count != b.transactionId.utf8.count {
            return a.transactionId.utf8.count < b.transactionId.utf8.count
        }
        return a.transactionId.utf8.lexicographicallyPrecedes(b.transactionId.utf8)
    }

    /// Files `snapshot` in the ledger when it is newer than the snapshot of the same `transactionId`.
    @discardableResult
    private mutating func file(_ snapshot: SignedTransaction) -> Bool {
        let id = snapshot.payload.transactionId
        if let held = transactions[id], !snapshot.supersedes(held) { return false }
        transactions[id] = snapshot
        return true
    }

    /// Keeps `snapshot` when it is newer than the renewal info held.
    @discardableResult
    private mutating func file(_ snapshot: SignedRenewalInfo) -> Bool {
        if let held = renewalInfo, !snapshot.supersedes(held) { return false }
        renewalInfo = snapshot
        return true
    }

    private func check(_ snapshot: SignedTransaction) throws(SnapshotRefusal) {
        let payload = snapshot.payload
        if payload.bundleId != key.bundleId {
            throw SnapshotRefusal(
                snapshot: .transaction, reason: .otherApp(expected: key.bundleId, found: payload.bundleId))
        }
        if payload.environment != key.environment {
            throw SnapshotRefusal(
                snapshot: .transaction,
                reason: .otherEnvironment(expected: key.environment, found: payload.environment))
        }
        if payload.originalTransactionId != key.originalTransactionId {
            throw SnapshotRefusal(
                snapshot: .transaction,
                reason: .otherSubscription(expected: key.originalTransactionId, found: payload.originalTransactionId))
        }
        if payload.transactionId.isEmpty {
            throw SnapshotRefusal(snapshot: .transaction, reason: .missingTransactionId)
        }
    }

    /// Renewal info names no bundle id: its environment and subscription must match.
    private func check(_ snapshot: SignedRenewalInfo) throws(SnapshotRefusal) {
        let payload = snapshot.payload
        if payload.environment != key.environment {
            throw SnapshotRefusal(
                snapshot: .renewalInfo,
                reason: .otherEnvironment(expected: key.environment, found: payload.environment))
        }
        if payload.originalTransactionId != key.originalTransactionId {
            throw SnapshotRefusal(
                snapshot: .renewalInfo,
                reason: .otherSubscription(expected: key.originalTransactionId, found: payload.originalTransactionId))
        }
    }
}
