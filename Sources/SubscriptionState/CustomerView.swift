import ProtoCodec

/// One customer as the gateway knows them: their subscription records (several groups, their own and shared
/// with them) and their one-time purchases, and the entitlements those grant at an instant.
package struct CustomerView: Sendable, Hashable {
    /// The customer's subscription records, as given.
    package let subscriptions: [SubscriptionRecord]
    /// The one-time purchases that grant access (non-consumables and non-renewing subscriptions): the newest
    /// snapshot of each `transactionId`, ordered by purchase date, then `transactionId`. Consumables and
    /// auto-renewables are left out (an auto-renewable belongs in a `SubscriptionRecord`).
    package let purchases: [SignedTransaction]

    /// The view of `subscriptions` and `purchases` (snapshots of any product type, duplicates and older
    /// snapshots included: they fold as in a record).
    package init(subscriptions: [SubscriptionRecord], purchases: [SignedTransaction]) {
        self.subscriptions = subscriptions
        var newest: [String: SignedTransaction] = [:]
        for purchase in purchases where Self.grantsAccess(purchase.payload.type) {
            let id = purchase.payload.transactionId
            if let held = newest[id], !purchase.supersedes(held) { continue }
            newest[id] = purchase
        }
        self.purchases = newest.values.sorted { SubscriptionRecord.holdsBefore($0.payload, $1.payload) }
    }

    /// The customer's entitlements at `nowMillis` under `policy`, sorted by name: every entitlement at least one
    /// subscription or purchase unlocks, active when one grants it now. A subscription grants while its state is
    /// `entitled`; a one-time purchase until it is revoked.
    package func entitlements(at nowMillis: Int64, policy: SubscriptionPolicy) -> [EntitlementGrant] {
        var sources: [String: [Source]] = [:]
        for record in subscriptions {
            let state = record.state(at: nowMillis, policy: policy)
            guard state.transaction != nil else { continue }
            let end = state.status == .billingGracePeriod ? state.gracePeriodExpiresDateMillis : state.expiresDateMillis
            let source = Source(
                originalTransactionId: record.key.originalTransactionId, productId: state.productId,
                active: state.entitled, accessEnd: end, expiresDate: state.expiresDateMillis)
            for name in policy.entitlementNames(unlockedBy: state.productId) {
                sources[name, default: []].append(source)
            }
        }
        for purchase in purchases {
            let payload = purchase.payload
            let source = Source(
                originalTransactionId: payload.originalTransactionId, productId: payload.productId,
                active: Self.grant(of: purchase, policy: policy).entitled, accessEnd: nil, expiresDate: nil)
            for name in policy.entitlementNames(unlockedBy: payload.productId) {
                sources[name, default: []].append(source)
            }
        }
        return sources.map { name, all in Self.entitlement(name, from: all) }.sorted { $0.name < $1.name }
    }

    /// What one one-time purchase grants under `policy`, at any instant: access until it is revoked, and while it
    /// grants access the entitlements its product unlocks.
    package static func grant(of purchase: SignedTransaction, policy: SubscriptionPolicy) -> PurchaseGrant {
        let payload = purchase.payload
        let entitled = payload.revokedAt == nil
        return PurchaseGrant(
            entitled: entitled, entitlements: entitled ? policy.entitlementNames(unlockedBy: payload.productId) : [],
            revocationDateMillis: payload.revokedAt)
    }

    /// What one subscription or purchase contributes to an entitlement.
    private struct Source {
        var originalTransactionId: String
        var productId: String
        var active: Bool
        /// The end of access while active; nil for none.
        var accessEnd: Int64?
        var expiresDate: Int64?
    }

    private static func entitlement(_ name: String, from all: [Source]) -> EntitlementGrant {
        let granting = all.filter(\.active)
        let counted = granting.isEmpty ? all : granting
        let expires: Int64?
        if granting.isEmpty {
            expires = all.compactMap(\.expiresDate).max()
        } else {
            let ends = granting.map(\.accessEnd)
            expires = ends.contains(nil) ? nil : ends.compactMap { $0 }.max()
        }
        return EntitlementGrant(
            name: name, active: !granting.isEmpty, expiresDateMillis: expires,
            originalTransactionIds: Array(Set(counted.map(\.originalTransactionId))).sorted(),
            productIds: Array(Set(counted.map(\.productId))).sorted())
    }

    /// Whether a one-time purchase of `type` grants access: non-consumables and non-renewing subscriptions do.
    private static func grantsAccess(_ type: ProductType) -> Bool {
        type == .nonConsumable || type == .nonRenewable
    }
}

/// What one one-time purchase (non-consumable, non-renewing subscription) grants: `CustomerView.grant(of:policy:)`.
package struct PurchaseGrant: Sendable, Hashable {
    /// Whether it grants access: until it is revoked.
    package let entitled: Bool
    /// The entitlements its product unlocks while `entitled`, sorted; none once revoked.
    package let entitlements: [String]
    /// Its `revocationDate` (UNIX ms): refunded or revoked.
    package let revocationDateMillis: Int64?
}
