import ProtoCodec

/// One event a change of state makes: its type, and for an entitlement event the entitlement's name.
package struct SubscriptionEventDraft: Sendable, Hashable {
    package var type: SubscriptionEventType
    /// ENTITLEMENT_GRANTED / ENTITLEMENT_REVOKED: the entitlement; empty otherwise.
    package var entitlement: String

    package init(_ type: SubscriptionEventType, entitlement: String = "") {
        self.type = type
        self.entitlement = entitlement
    }
}

/// Names a change of state: the events that take consumers from the facts of the last event (`previous`; nil
/// before the first) to the facts now. Pure: the same two facts always make the same events, so events are a
/// function of the state, whatever brought it (a notification, an Apple read, an app's post, time).
///
/// One change of state makes one event, the most significant of what changed (`primary`), followed by one
/// ENTITLEMENT_GRANTED per entitlement newly granted and one ENTITLEMENT_REVOKED per entitlement no longer
/// granted (granted first, so a product change never shows a consumer a moment without access). Facts that
/// differ in nothing a type names (a re-signed snapshot, an app account token) make no event.
package enum SubscriptionEventRule {
    /// The events from `previous` to `current`, in the order they are sequenced.
    package static func events(from previous: SubscriptionEventFacts?, to current: SubscriptionEventFacts)
        -> [SubscriptionEventDraft]
    {
        if previous == current { return [] }
        var drafts: [SubscriptionEventDraft] = []
        if let type = primary(from: previous, to: current) { drafts.append(SubscriptionEventDraft(type)) }
        let before = Set(previous?.entitlements ?? [])
        let now = Set(current.entitlements)
        for name in now.subtracting(before).sorted() {
            drafts.append(SubscriptionEventDraft(.entitlementGranted, entitlement: name))
        }
        for name in before.subtracting(now).sorted() {
            drafts.append(SubscriptionEventDraft(.entitlementRevoked, entitlement: name))
        }
        return drafts
    }

    /// The one event type naming the change, by the precedence documented on `SubscriptionEventType`; nil when
    /// nothing a type names changed.
    package static func primary(from previous: SubscriptionEventFacts?, to current: SubscriptionEventFacts)
        -> SubscriptionEventType?
    {
        guard let previous else {
            switch current.kind {
            case .subscription: return .initialPurchase
            case .nonRenewing: return .nonRenewingPurchase
            case .nonConsumable: return .nonConsumablePurchase
            }
        }
        let sameTransaction = previous.transactionId == current.transactionId
        if previous.revokedAt == nil, current.revokedAt != nil, sameTransaction || current.kind != .subscription {
            return current.familyShared ? .revocation : .refund
        }
        if previous.revokedAt != nil, current.revokedAt == nil, sameTransaction { return .refundReversed }
        if current.kind != .subscription { return nil }
        if !sameTransaction {
            if previous.productId != current.productId { return .productChange }
            if previous.inBillingRetry || Self.inRetry(previous.status) { return .billingRecovery }
            return current.revokedAt == nil ? .renewal : (current.familyShared ? .revocation : .refund)
        }
        if let before = previous.expiresAt, let after = current.expiresAt, after > before { return .renewalExtended }
        if !previous.inBillingRetry, current.inBillingRetry { return .billingIssue }
        if previous.status == SubscriptionStatus.billingGracePeriod.rawValue,
            current.status == SubscriptionStatus.billingRetry.rawValue
        {
            return .gracePeriodExpired
        }
        let expired = SubscriptionStatus.expired.rawValue
        if previous.status != expired, current.status == expired { return .expiration }
        // A refund under `untilExpiry`: access ends when the refunded period does.
        if previous.entitled, !current.entitled, current.status == SubscriptionStatus.revoked.rawValue {
            return .expiration
        }
        if previous.autoRenew, !current.autoRenew { return .cancellation }
        if !previous.autoRenew, current.autoRenew { return .uncancellation }
        if previous.autoRenewProductId != current.autoRenewProductId, !current.autoRenewProductId.isEmpty {
            return .productChange
        }
        if current.priceIncrease != 0,
            previous.priceIncrease != current.priceIncrease || previous.renewalPrice != current.renewalPrice
        {
            return .priceIncrease
        }
        return nil
    }

    private static func inRetry(_ status: Int32) -> Bool {
        status == SubscriptionStatus.billingRetry.rawValue || status == SubscriptionStatus.billingGracePeriod.rawValue
    }
}
