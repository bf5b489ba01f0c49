import ProtoCodec

/// The facts of one subscription's (or one-time purchase's) state that subscription events compare: what a
/// consumer reacts to, and nothing of the bookkeeping (version, update time, signed dates). The store keeps the
/// facts of the last event of each subscription, so the next change is compared with what consumers last saw;
/// `SubscriptionEventRule` names the difference.
package struct SubscriptionEventFacts: Sendable, Hashable {
    /// What the facts are of.
    package enum Kind: UInt8, Sendable, Hashable {
        case subscription = 1
        case nonRenewing = 2
        case nonConsumable = 3
    }

    package var kind: Kind
    /// Apple's status number (1–5); for a purchase 1 (held) or 5 (revoked).
    package var status: Int32
    package var entitled: Bool
    /// The entitlements granted now, sorted.
    package var entitlements: [String]
    package var productId: String
    /// The current transaction's id.
    package var transactionId: String
    package var expiresAt: Int64?
    package var autoRenew: Bool
    package var autoRenewProductId: String
    package var inBillingRetry: Bool
    package var revokedAt: Int64?
    package var familyShared: Bool
    /// The renewal info's `priceIncreaseStatus` (proto number: 0 none, 1 not responded, 2 consented).
    package var priceIncrease: Int32
    /// The renewal info's `renewalPrice` (milliunits) while a price increase is pending or consented, else 0.
    package var renewalPrice: Int64

    /// The facts of a subscription's derived state; nil while the record holds no transaction (nothing to tell).
    package init?(_ state: DerivedSubscription) {
        guard let transaction = state.transaction?.payload else { return nil }
        let renewal = state.renewalInfo?.payload
        kind = .subscription
        status = state.status.rawValue
        entitled = state.entitled
        entitlements = state.entitlements
        productId = state.productId
        transactionId = transaction.transactionId
        expiresAt = state.expiresDateMillis
        autoRenew = state.autoRenew
        autoRenewProductId = state.autoRenewProductId
        inBillingRetry = state.inBillingRetry
        revokedAt = state.revocationDateMillis
        familyShared = state.ownershipType == .familyShared
        priceIncrease = renewal?.priceIncreaseStatus.rawValue ?? 0
        renewalPrice = priceIncrease == 0 ? 0 : renewal?.renewalPriceMilliunits ?? 0
    }

    /// The facts of a one-time purchase's newest snapshot under `policy`: held until revoked; nil for a product
    /// type that grants nothing lasting (a consumable).
    package init?(purchase: SignedTransaction, policy: SubscriptionPolicy) {
        let payload = purchase.payload
        switch payload.type {
        case .nonRenewable: kind = .nonRenewing
        case .nonConsumable: kind = .nonConsumable
        default: return nil
        }
        let revoked = payload.revokedAt
        status = revoked == nil ? SubscriptionStatus.active.rawValue : SubscriptionStatus.revoked.rawValue
        entitled = revoked == nil
        entitlements = revoked == nil ? policy.entitlementNames(unlockedBy: payload.productId) : []
        productId = payload.productId
        transactionId = payload.transactionId
        expiresAt = payload.expiresAt
        autoRenew = false
        autoRenewProductId = ""
        inBillingRetry = false
        revokedAt = revoked
        familyShared = payload.inAppOwnershipType == .familyShared
        priceIncrease = 0
        renewalPrice = 0
    }
}
