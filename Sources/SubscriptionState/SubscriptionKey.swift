import ProtoCodec

/// What identifies one subscription record: the app (by bundle id, which every transaction names), Apple's
/// environment, and the subscription's `originalTransactionId`. A family member's shared subscription has its
/// own `originalTransactionId`, so it is a record of its own.
package struct SubscriptionKey: Sendable, Hashable {
    /// The app's bundle id (`bundleId` of its transactions).
    package var bundleId: String
    /// The environment the transactions were made in.
    package var environment: Environment
    /// Apple's `originalTransactionId`: stable across renewals, upgrades and restores.
    package var originalTransactionId: String

    /// The key of the given app, environment and subscription.
    package init(bundleId: String, environment: Environment, originalTransactionId: String) {
        self.bundleId = bundleId
        self.environment = environment
        self.originalTransactionId = originalTransactionId
    }

    /// The key of the record `transaction` belongs to.
    package init(of transaction: Transaction) {
        self.init(
            bundleId: transaction.bundleId, environment: transaction.environment,
            originalTransactionId: transaction.originalTransactionId)
    }
}

/// Who brought the last change to a record.
package enum SnapshotSource: String, Sendable, Hashable, CaseIterable {
    /// An App Store Server Notification (webhook, backfill, reconciliation).
    case notification
    /// An answer of Apple's API (Get All Subscription Statuses, transaction info, history).
    case appleRead
    /// The app posted what StoreKit gave it (ApplySignedTransaction).
    case appPosted
}
