/// One step of a scripted subscription lifecycle: how far the simulated clock moves, then what happens at that
/// instant. Steps are values; `LifecycleState.applying(_:)` turns one into a new state and the notifications Apple
/// would send for it.
package struct LifecycleStep: Sendable, Hashable {
    /// How far the clock moves before the event.
    package var advance: LifecycleAdvance
    /// What happens at the new instant.
    package var event: LifecycleEvent

    /// `event` after `advance`.
    package init(_ event: LifecycleEvent, after advance: LifecycleAdvance = .none) {
        self.advance = advance
        self.event = event
    }
}

/// How far the simulated clock moves before a step. The clock never moves back: a target already passed leaves it
/// where it is.
package enum LifecycleAdvance: Sendable, Hashable {
    /// By a fixed number of milliseconds (0 or more).
    case by(milliseconds: Int64)
    /// To the end of the subscription's current period (its latest transaction's `expiresDate`).
    case toExpiry
    /// To the subscription's `gracePeriodExpiresDate`.
    case toGracePeriodEnd
    /// To the end of Apple's billing-retry window: the period's end plus `LifecycleCalendar.billingRetry`.
    case toBillingRetryEnd

    /// No time passes.
    package static let none = LifecycleAdvance.by(milliseconds: 0)

    /// `count` days of 86,400 s.
    package static func days(_ count: Int64) -> LifecycleAdvance { .by(milliseconds: count * LifecycleCalendar.day) }

    /// `count` hours.
    package static func hours(_ count: Int64) -> LifecycleAdvance { .by(milliseconds: count * 3_600_000) }

    /// `count` minutes.
    package static func minutes(_ count: Int64) -> LifecycleAdvance { .by(milliseconds: count * 60_000) }
}

/// What happens in a step, named after what the customer, the App Store or the developer does. Each event sends
/// the notification Apple sends for it (Apple's App Store Server Notifications V2 documentation).
package enum LifecycleEvent: Sendable, Hashable {
    /// The customer subscribes to `product` (an auto-renewable subscription), with an offer or none: SUBSCRIBED
    /// (OFFER_REDEEMED for a promotional offer or an offer code), INITIAL_BUY the first time, RESUBSCRIBE after
    /// the subscription expired.
    case buy(product: String, offer: LifecycleOffer?)
    /// The period ends and the subscription renews (DID_RENEW), into `autoRenewProductId`.
    case renew
    /// Billing fails at the end of the period (DID_FAIL_TO_RENEW): with a billing grace period (subtype
    /// GRACE_PERIOD, status 4) or without (status 3, billing retry).
    case failToRenew(gracePeriod: Bool)
    /// The grace period ends without a renewal (GRACE_PERIOD_EXPIRED); billing retry goes on (status 3).
    case expireGracePeriod
    /// Billing succeeds during billing retry (DID_RENEW / BILLING_RECOVERY): a new period starts now.
    case recover
    /// The customer turns auto-renew off (DID_CHANGE_RENEWAL_STATUS / AUTO_RENEW_DISABLED).
    case disableAutoRenew
    /// The customer turns auto-renew back on (DID_CHANGE_RENEWAL_STATUS / AUTO_RENEW_ENABLED).
    case enableAutoRenew
    /// A better service level in the group, at once (DID_CHANGE_RENEWAL_PREF / UPGRADE): a new transaction, the
    /// old one `isUpgraded`.
    case upgrade(to: String)
    /// A lower service level, from the next renewal (DID_CHANGE_RENEWAL_PREF / DOWNGRADE): `autoRenewProductId`
    /// changes now.
    case downgrade(to: String)
    /// The same service level: at once when the period length is the same (subtype UPGRADE), else from the next
    /// renewal (subtype DOWNGRADE), as Apple documents for cross-grades.
    case crossgrade(to: String)
    /// The developer raises the price; the customer has not consented yet (PRICE_INCREASE / PENDING).
    case announcePriceIncrease
    /// The customer consents to the pending price increase (PRICE_INCREASE / ACCEPTED).
    case acceptPriceIncrease
    /// The App Store refunds a transaction (REFUND, `revocationDate` set).
    case refund(LifecycleRefundTarget)
    /// The App Store declines a refund request (REFUND_DECLINED); nothing changes.
    case declineRefund(LifecycleRefundTarget)
    /// The App Store reverses a refund (REFUND_REVERSED): a newer snapshot without the revocation.
    case reverseRefund(LifecycleRefundTarget)
    /// The purchaser shares the subscription: a family member gets a record of their own (its own original
    /// transaction id and app transaction id, `inAppOwnershipType` FAMILY_SHARED): SUBSCRIBED / INITIAL_BUY.
    case shareWithFamily
    /// The purchaser stops sharing: every member still sharing loses access (REVOKE, status 5 for them only).
    case revokeFamilySharing
    /// The developer extends the current period by `days` (1…90): RENEWAL_EXTENDED.
    case extendRenewal(days: Int)
    /// The customer buys a one-time product (non-consumable, consumable or non-renewing subscription):
    /// ONE_TIME_CHARGE.
    case purchase(product: String)
    /// The subscription expires (EXPIRED), with the reason its state gives: VOLUNTARY (auto-renew off),
    /// BILLING_RETRY (billing retry ran out), PRICE_INCREASE (a price increase was never accepted).
    case expire
}

/// The offer a purchase redeems.
package enum LifecycleOffer: String, Sendable, Hashable, CaseIterable {
    /// An introductory free trial of one week (`offerType` 1, FREE_TRIAL, price 0).
    case freeTrial
    /// An introductory offer: the first period at half price (`offerType` 1, PAY_AS_YOU_GO).
    case introductory
    /// A promotional offer: the first period at half price (`offerType` 2, with an `offerIdentifier`).
    case promotional
    /// An offer code: the first period at 70 % (`offerType` 3, PAY_UP_FRONT, with the code's reference name).
    case offerCode
}

/// Which transaction a refund step is about.
package enum LifecycleRefundTarget: Sendable, Hashable {
    /// The subscription's current (latest) transaction.
    case currentPeriod
    /// The subscription's `n`th transaction, 1 being the first purchase.
    case period(Int)
    /// The latest one-time purchase of `product`.
    case purchase(product: String)
}

/// The lengths the lifecycles use. Their clock is simulated, so sandbox time is not compressed: both environments
/// use these production lengths, which keeps every date exact and readable.
package enum LifecycleCalendar {
    /// One day in milliseconds.
    package static let day: Int64 = 86_400_000
    /// One billing month: 30 days (as the generated histories).
    package static let month: Int64 = 30 * day
    /// One billing year: 365 days.
    package static let year: Int64 = 365 * day
    /// A free trial: one week (`offerPeriod` P1W).
    package static let freeTrial: Int64 = 7 * day
    /// The billing grace period: 16 days (one of the lengths App Store Connect offers).
    package static let gracePeriod: Int64 = 16 * day
    /// Apple's billing-retry window: 60 days after the period's end.
    package static let billingRetry: Int64 = 60 * day
    /// A renewal happens within the 24 hours before the period ends.
    package static let renewalWindow: Int64 = day
    /// Lapses shorter than this keep `recentSubscriptionStartDate` (Apple's definition of the field).
    package static let continuityLapse: Int64 = 60 * day

    /// The length of one period of `product`.
    static func period(of product: SimulatedProduct) -> Int64 {
        product.periodMonths >= 12 ? year : Int64(max(1, product.periodMonths)) * month
    }

    /// The ISO 8601 `offerPeriod` of one period of `product`.
    static func offerPeriod(of product: SimulatedProduct) -> String {
        product.periodMonths >= 12 ? "P1Y" : "P\(max(1, product.periodMonths))M"
    }
}
