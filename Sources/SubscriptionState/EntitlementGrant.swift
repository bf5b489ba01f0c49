/// One entitlement of a customer at an instant: whether any of its sources (subscriptions and one-time purchases
/// whose product unlocks it) grants it, and until when.
public struct EntitlementGrant: Sendable, Hashable {
    /// The entitlement's name, as configured (`apps[].entitlements`).
    public let name: String
    /// Whether at least one source grants it now.
    public let active: Bool
    /// While active: the latest end among the sources that grant it (UNIX ms; a grace period counts to its end),
    /// nil when one of them has no end (a non-consumable, a non-renewing subscription). While inactive: the latest
    /// `expiresDate` among its sources, nil when none has one.
    public let expiresDateMillis: Int64?
    /// The `originalTransactionId`s of the sources that grant it (of every source while inactive), sorted.
    public let originalTransactionIds: [String]
    /// The product ids of the sources that grant it (of every source while inactive), sorted.
    public let productIds: [String]
}
