/// A named script of steps that drives one subscription (and its family, and one-time purchases) through a life.
/// Products are named by their part after the bundle id (`premium.monthly`), so a script fits every app.
package struct Lifecycle: Sendable, Hashable {
    /// The name the control surface knows it by (`POST /simulator/lifecycles {"lifecycle": name}`).
    package var name: String
    /// One line: what the lifecycle shows.
    package var summary: String
    /// The script, performed in order.
    package var steps: [LifecycleStep]

    /// A lifecycle called `name` performing `steps`.
    package init(name: String, summary: String, steps: [LifecycleStep]) {
        self.name = name
        self.summary = summary
        self.steps = steps
    }

    /// The lifecycle called `name`, if it is one of `all`.
    package static func named(_ name: String) -> Lifecycle? { all.first { $0.name == name } }

    /// Every named lifecycle: each event of Apple's subscription model at least once.
    package static let all: [Lifecycle] = subscriptions + billing + changes + refunds + others

    private static let monthly = "premium.monthly"

    private static func buy(_ offer: LifecycleOffer? = nil, _ product: String = monthly) -> LifecycleStep {
        LifecycleStep(.buy(product: product, offer: offer))
    }

    private static let renewAtExpiry = LifecycleStep(.renew, after: .toExpiry)

    private static let subscriptions: [Lifecycle] = [
        Lifecycle(
            name: "renewals", summary: "subscribe, then renew twice at the end of each period",
            steps: [buy(), renewAtExpiry, renewAtExpiry]),
        Lifecycle(
            name: "auto-renew-off-on", summary: "turn auto-renew off and on again, then renew",
            steps: [
                buy(), LifecycleStep(.disableAutoRenew, after: .days(5)),
                LifecycleStep(.enableAutoRenew, after: .days(5)), renewAtExpiry,
            ]),
        Lifecycle(
            name: "voluntary-expiry", summary: "turn auto-renew off; the subscription expires (EXPIRED VOLUNTARY)",
            steps: [
                buy(), LifecycleStep(.disableAutoRenew, after: .days(10)), LifecycleStep(.expire, after: .toExpiry),
            ]),
        Lifecycle(
            name: "resubscribe", summary: "expire voluntarily, then subscribe again two weeks later (RESUBSCRIBE)",
            steps: [
                buy(), LifecycleStep(.disableAutoRenew, after: .days(10)), LifecycleStep(.expire, after: .toExpiry),
                LifecycleStep(.buy(product: monthly, offer: nil), after: .days(14)),
            ]),
        Lifecycle(
            name: "free-trial", summary: "a one-week free trial, then the first paid period",
            steps: [buy(.freeTrial), renewAtExpiry]),
        Lifecycle(
            name: "introductory-offer", summary: "the first month at half price, then full price",
            steps: [buy(.introductory), renewAtExpiry]),
        Lifecycle(
            name: "promotional-offer", summary: "a promotional offer at purchase (OFFER_REDEEMED), then full price",
            steps: [buy(.promotional), renewAtExpiry]),
        Lifecycle(
            name: "offer-code", summary: "an offer code at purchase (OFFER_REDEEMED), then full price",
            steps: [buy(.offerCode), renewAtExpiry]),
    ]

    private static let billing: [Lifecycle] = [
        Lifecycle(
            name: "billing-grace-recovered", summary: "billing fails with a grace period; the customer recovers",
            steps: [
                buy(), LifecycleStep(.failToRenew(gracePeriod: true), after: .toExpiry),
                LifecycleStep(.recover, after: .days(3)),
            ]),
        Lifecycle(
            name: "billing-grace-expired",
            summary:
                "billing fails with a grace period, the grace ends, billing retry runs out (EXPIRED BILLING_RETRY)",
            steps: [
                buy(), LifecycleStep(.failToRenew(gracePeriod: true), after: .toExpiry),
                LifecycleStep(.expireGracePeriod, after: .toGracePeriodEnd),
                LifecycleStep(.expire, after: .toBillingRetryEnd),
            ]),
        Lifecycle(
            name: "billing-retry-recovered", summary: "billing fails without a grace period; the customer recovers",
            steps: [
                buy(), LifecycleStep(.failToRenew(gracePeriod: false), after: .toExpiry),
                LifecycleStep(.recover, after: .days(5)),
            ]),
        Lifecycle(
            name: "billing-retry-expired", summary: "billing fails without a grace period until retry runs out",
            steps: [
                buy(), LifecycleStep(.failToRenew(gracePeriod: false), after: .toExpiry),
                LifecycleStep(.expire, after: .toBillingRetryEnd),
            ]),
    ]

    private static let changes: [Lifecycle] = [
        Lifecycle(
            name: "upgrade", summary: "upgrade to pro at once (a new transaction; the old one isUpgraded), then renew",
            steps: [buy(), LifecycleStep(.upgrade(to: "pro.monthly"), after: .days(10)), renewAtExpiry]),
        Lifecycle(
            name: "downgrade", summary: "downgrade from pro, effective at the next renewal",
            steps: [buy(nil, "pro.monthly"), LifecycleStep(.downgrade(to: monthly), after: .days(10)), renewAtExpiry]),
        Lifecycle(
            name: "crossgrade", summary: "cross-grade from monthly to yearly (another period: at the next renewal)",
            steps: [buy(), LifecycleStep(.crossgrade(to: "premium.yearly"), after: .days(10)), renewAtExpiry]),
        Lifecycle(
            name: "price-increase-accepted", summary: "a price increase the customer accepts; the renewal costs more",
            steps: [
                buy(), LifecycleStep(.announcePriceIncrease, after: .days(10)),
                LifecycleStep(.acceptPriceIncrease, after: .days(5)), renewAtExpiry,
            ]),
        Lifecycle(
            name: "price-increase-declined", summary: "a price increase never accepted (EXPIRED PRICE_INCREASE)",
            steps: [
                buy(), LifecycleStep(.announcePriceIncrease, after: .days(10)),
                LifecycleStep(.expire, after: .toExpiry),
            ]),
        Lifecycle(
            name: "renewal-extension", summary: "the developer extends the period by a week, then it renews",
            steps: [buy(), LifecycleStep(.extendRenewal(days: 7), after: .days(10)), renewAtExpiry]),
    ]

    private static let refunds: [Lifecycle] = [
        Lifecycle(
            name: "refund-current-period", summary: "the current period is refunded (status 5)",
            steps: [buy(), renewAtExpiry, LifecycleStep(.refund(.currentPeriod), after: .days(5))]),
        Lifecycle(
            name: "refund-earlier-period",
            summary: "the first period is refunded after two renewals (REFUND of an older transaction; still active)",
            steps: [buy(), renewAtExpiry, renewAtExpiry, LifecycleStep(.refund(.period(1)), after: .days(3))]),
        Lifecycle(
            name: "refund-declined", summary: "a refund request is declined",
            steps: [buy(), LifecycleStep(.declineRefund(.currentPeriod), after: .days(3))]),
        Lifecycle(
            name: "refund-reversed", summary: "a refund, then its reversal",
            steps: [
                buy(), LifecycleStep(.refund(.currentPeriod), after: .days(3)),
                LifecycleStep(.reverseRefund(.currentPeriod), after: .days(7)),
            ]),
    ]

    private static let others: [Lifecycle] = [
        Lifecycle(
            name: "family-sharing",
            summary: "shared with a family member (a FAMILY_SHARED record), renewed for both, then revoked (REVOKE)",
            steps: [
                buy(), LifecycleStep(.shareWithFamily, after: .days(1)), renewAtExpiry,
                LifecycleStep(.revokeFamilySharing, after: .days(3)),
            ]),
        Lifecycle(
            name: "non-consumable", summary: "a non-consumable bought (ONE_TIME_CHARGE), then refunded",
            steps: [
                LifecycleStep(.purchase(product: "unlock.lifetime")),
                LifecycleStep(.refund(.purchase(product: "unlock.lifetime")), after: .days(5)),
            ]),
        Lifecycle(
            name: "non-renewing-subscription", summary: "a non-renewing season pass bought (ONE_TIME_CHARGE)",
            steps: [LifecycleStep(.purchase(product: "season.pass"))]),
    ]
}
