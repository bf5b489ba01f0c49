/// The company's choices that turn Apple's facts into access: what a refund does, and which products unlock
/// which entitlements. Configured per app (`subscriptions.refundPolicy`, `apps[].entitlements`).
package struct SubscriptionPolicy: Sendable, Hashable {
    /// What a refunded (revoked) current transaction does to access. Apple's status is 5 either way.
    package enum RefundPolicy: String, Sendable, Hashable, CaseIterable {
        /// Access ends as soon as the current transaction is revoked (Apple's status 5): the default.
        case immediate
        /// Access lasts until the revoked transaction's `expiresDate`, then ends.
        case untilExpiry
    }

    /// What a revoked current transaction does to access; `.immediate` by default.
    package var refundPolicy: RefundPolicy
    /// Entitlement name → the product ids that unlock it. Many-to-many: a product may unlock several
    /// entitlements, and several products one.
    package var entitlements: [String: Set<String>]

    /// A policy; by default refunds end access at once and no product unlocks an entitlement.
    package init(refundPolicy: RefundPolicy = .immediate, entitlements: [String: Set<String>] = [:]) {
        self.refundPolicy = refundPolicy
        self.entitlements = entitlements
    }

    /// Apple's behaviour and no entitlements.
    package static let defaults = SubscriptionPolicy()

    /// The entitlements `productId` unlocks, sorted by name.
    package func entitlementNames(unlockedBy productId: String) -> [String] {
        entitlements.compactMap { name, products in products.contains(productId) ? name : nil }.sorted()
    }
}
