import ProtoCodec

/// Why a record refused a snapshot: it is about another subscription, app or environment, or names no
/// transaction. A refused call changes nothing, not even the snapshot that matched.
package struct SnapshotRefusal: Error, Sendable, Hashable {
    /// Which of the two snapshots of a call was refused.
    package enum Snapshot: String, Sendable, Hashable {
        /// The signed transaction.
        case transaction
        /// The signed renewal info.
        case renewalInfo
    }

    /// What does not match the record's key.
    package enum Reason: Sendable, Hashable {
        /// The transaction's `bundleId` is not the record's.
        case otherApp(expected: String, found: String)
        /// The payload's `environment` is not the record's.
        case otherEnvironment(expected: Environment, found: Environment)
        /// The payload's `originalTransactionId` is not the record's.
        case otherSubscription(expected: String, found: String)
        /// The transaction has no `transactionId`, so the ledger cannot file it.
        case missingTransactionId
    }

    /// The refused snapshot.
    package var snapshot: Snapshot
    /// Why it was refused.
    package var reason: Reason

    /// A refusal of `snapshot` for `reason`.
    package init(snapshot: Snapshot, reason: Reason) {
        self.snapshot = snapshot
        self.reason = reason
    }
}
