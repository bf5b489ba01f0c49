/// One entitlement of a customer at an instant: whether any of its sources (subscriptions and one-time purchases
/// whose product unlocks it) grants it, and until when.
package struct EntitlementGrant: Sendable, Hashable {
    /// The entitlement's name, as configured (`apps[].entitlements`).
    package let name: String
    /// Whether at least one source grants it now.
    package let active: Bool
    /// While active: the latest end among the sources that grant it (UNIX ms; a grace period counts to its end),
    /// nil when one of them has no end (a non-consumable, a non-renewing subscription). While inactive: the latest
    /// `expiresDate` among its sources, nil when none has one.
    package let expiresDateMillis: Int64?
    /// The `originalTransactionId`s of the sources that grant it (of every source while inactive), sorted.
    package let originalTransactionIds: [String]
    /// The product ids of the sources that grant it (of every source while inactive), sorted.
    package let productIds: [String]
}
