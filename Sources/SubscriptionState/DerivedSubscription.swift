import ProtoCodec

/// What a subscription record says at one instant under one policy: Apple's status, whether the customer has
/// access, and the facts a caller needs, all from the current transaction and the newest renewal info.
/// `SubscriptionRecord.state(at:policy:)` makes it; it holds no bookkeeping (version, update time, source), so
/// two records with the same snapshots give equal values.
package struct DerivedSubscription: Sendable, Hashable {
    /// The record's key.
    package let key: SubscriptionKey
    /// Apple's status: 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked; `.unspecified`
    /// while the record holds no transaction.
    package let status: SubscriptionStatus
    /// Whether the customer has access now: active or in grace, or revoked but not yet expired under
    /// `RefundPolicy.untilExpiry`.
    package let entitled: Bool
    /// The entitlements granted now, sorted: those the current product unlocks while `entitled`, else none.
    package let entitlements: [String]
    /// The current transaction's product.
    package let productId: String
    /// The current transaction's subscription group.
    package let subscriptionGroupIdentifier: String
    /// The current transaction's `expiresDate` (UNIX ms).
    package let expiresDateMillis: Int64?
    /// The renewal info's `gracePeriodExpiresDate` (UNIX ms).
    package let gracePeriodExpiresDateMillis: Int64?
    /// Whether the renewal info says the subscription renews automatically.
    package let autoRenew: Bool
    /// The product of the next renewal (differs from `productId` after a downgrade or crossgrade).
    package let autoRenewProductId: String
    /// Whether Apple is retrying a failed renewal charge.
    package let inBillingRetry: Bool
    /// The current transaction's `revocationDate` (UNIX ms): refunded or revoked.
    package let revocationDateMillis: Int64?
    /// Bought by the customer, or shared with them by Family Sharing.
    package let ownershipType: InAppOwnershipType
    /// The app's UUID for the customer: the transaction's, else the renewal info's; empty when neither has one.
    package let appAccountToken: String
    /// The current transaction, signed and decoded.
    package let transaction: SignedTransaction?
    /// The newest renewal info, signed and decoded.
    package let renewalInfo: SignedRenewalInfo?
    /// The current transaction's `signedDate` (UNIX ms).
    package let transactionSignedDateMillis: Int64?
    /// The renewal info's `signedDate` (UNIX ms).
    package let renewalSignedDateMillis: Int64?
    /// True when this state cannot be known without asking Apple: the period is over, auto-renew is on, Apple is
    /// not retrying a charge and has said nothing since the expiry, so a renewal may have been missed; also while
    /// the record holds no transaction, or only transactions upgraded away.
    package let needsConfirmation: Bool
}
