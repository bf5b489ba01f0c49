import AppStoreDomain
import Foundation
import Testing

@testable import Simulator

/// The pure lifecycle model: every named lifecycle's notifications (type/subtype) and statuses per step, exact
/// dates, Family Sharing, refunds of earlier periods, and steps refused in the wrong state.
@Suite struct LifecycleModelTests {
    static let start: Int64 = 1_750_000_000_000
    static let day = LifecycleCalendar.day
    static let bundleId = "com.example.app"

    static func state(number: UInt64 = 0, environment: AppleEnvironment = .sandbox) -> LifecycleState {
        LifecycleState(bundleId: bundleId, environment: environment, number: number, start: start, seed: 1)
    }

    /// Every step of `name`'s script applied in turn.
    static func run(_ name: String) throws -> [LifecycleTransition] {
        let lifecycle = try #require(Lifecycle.named(name))
        var current = state()
        var transitions: [LifecycleTransition] = []
        for step in lifecycle.steps {
            let transition = try current.applying(step)
            transitions.append(transition)
            current = transition.state
        }
        return transitions
    }

    /// "TYPE/SUBTYPE" (or "TYPE") of each notification.
    static func labels(_ transition: LifecycleTransition) -> [String] {
        transition.notifications.map { [$0.notificationType, $0.subtype].compactMap { $0 }.joined(separator: "/") }
    }

    /// Per lifecycle and step: the notifications sent and the purchaser's status after it (nil: no subscription).
    static let expectations: [(String, [([String], Int?)])] = [
        ("renewals", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW"], 1), (["DID_RENEW"], 1)]),
        (
            "auto-renew-off-on",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED"], 1),
                (["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED"], 1), (["DID_RENEW"], 1),
            ]
        ),
        (
            "voluntary-expiry",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED"], 1),
                (["EXPIRED/VOLUNTARY"], 2),
            ]
        ),
        (
            "resubscribe",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED"], 1),
                (["EXPIRED/VOLUNTARY"], 2), (["SUBSCRIBED/RESUBSCRIBE"], 1),
            ]
        ),
        ("free-trial", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW"], 1)]),
        ("introductory-offer", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW"], 1)]),
        ("promotional-offer", [(["OFFER_REDEEMED/INITIAL_BUY"], 1), (["DID_RENEW"], 1)]),
        ("offer-code", [(["OFFER_REDEEMED/INITIAL_BUY"], 1), (["DID_RENEW"], 1)]),
        (
            "billing-grace-recovered",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_FAIL_TO_RENEW/GRACE_PERIOD"], 4),
                (["DID_RENEW/BILLING_RECOVERY"], 1),
            ]
        ),
        (
            "billing-grace-expired",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_FAIL_TO_RENEW/GRACE_PERIOD"], 4), (["GRACE_PERIOD_EXPIRED"], 3),
                (["EXPIRED/BILLING_RETRY"], 2),
            ]
        ),
        (
            "billing-retry-recovered",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_FAIL_TO_RENEW"], 3), (["DID_RENEW/BILLING_RECOVERY"], 1)]
        ),
        (
            "billing-retry-expired",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_FAIL_TO_RENEW"], 3), (["EXPIRED/BILLING_RETRY"], 2)]
        ),
        (
            "upgrade",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_PREF/UPGRADE"], 1), (["DID_RENEW"], 1)]
        ),
        (
            "downgrade",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_PREF/DOWNGRADE"], 1), (["DID_RENEW"], 1)]
        ),
        (
            "crossgrade",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_CHANGE_RENEWAL_PREF/DOWNGRADE"], 1), (["DID_RENEW"], 1)]
        ),
        (
            "price-increase-accepted",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["PRICE_INCREASE/PENDING"], 1), (["PRICE_INCREASE/ACCEPTED"], 1),
                (["DID_RENEW"], 1),
            ]
        ),
        (
            "price-increase-declined",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["PRICE_INCREASE/PENDING"], 1), (["EXPIRED/PRICE_INCREASE"], 2)]
        ),
        ("renewal-extension", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["RENEWAL_EXTENDED"], 1), (["DID_RENEW"], 1)]),
        ("refund-current-period", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW"], 1), (["REFUND"], 5)]),
        (
            "refund-earlier-period",
            [(["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW"], 1), (["DID_RENEW"], 1), (["REFUND"], 1)]
        ),
        ("refund-declined", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["REFUND_DECLINED"], 1)]),
        ("refund-reversed", [(["SUBSCRIBED/INITIAL_BUY"], 1), (["REFUND"], 5), (["REFUND_REVERSED"], 1)]),
        (
            "family-sharing",
            [
                (["SUBSCRIBED/INITIAL_BUY"], 1), (["SUBSCRIBED/INITIAL_BUY"], 1), (["DID_RENEW", "DID_RENEW"], 1),
                (["REVOKE"], 1),
            ]
        ),
        ("non-consumable", [(["ONE_TIME_CHARGE"], nil), (["REFUND"], nil)]),
        ("non-renewing-subscription", [(["ONE_TIME_CHARGE"], nil)]),
    ]

    @Test func everyNamedLifecycleHasItsExpectations() {
        #expect(Set(Lifecycle.all.map(\.name)) == Set(Self.expectations.map(\.0)))
        #expect(Set(Lifecycle.all.map(\.name)).count == Lifecycle.all.count)
    }

    @Test(arguments: Self.expectations.map(\.0))
    func lifecycleSendsAppleNotificationsWithStatuses(_ name: String) throws {
        let expected = try #require(Self.expectations.first { $0.0 == name }?.1)
        let transitions = try Self.run(name)
        #expect(transitions.count == expected.count)
        for (index, (transition, (labels, status))) in zip(transitions, expected).enumerated() {
            #expect(Self.labels(transition) == labels, "\(name) step \(index)")
            #expect(transition.state.status == status, "\(name) step \(index)")
            for notification in transition.notifications {
                // Every snapshot is as of the step's instant, and data.status agrees with the record's.
                #expect(notification.signedDate == transition.state.now)
                if let renewal = notification.renewal {
                    let record = transition.state.records.first {
                        $0.originalTransactionId == renewal.originalTransactionId
                    }
                    #expect(record?.status(at: transition.state.now) == renewal.status)
                    #expect(record?.renewal == renewal)
                }
            }
        }
    }

    @Test func renewalsFollowEachOtherWithExactDates() throws {
        let steps = try Self.run("renewals")
        let dates = steps.map { ($0.state.now, $0.state.subscription?.current.expiresDate) }
        #expect(dates.map(\.0) == [Self.start, Self.start + 30 * Self.day, Self.start + 60 * Self.day])
        #expect(dates.map(\.1) == [Self.start + 30 * Self.day, Self.start + 60 * Self.day, Self.start + 90 * Self.day])
        let record = try #require(steps.last?.state.subscription)
        #expect(record.transactions.map(\.transactionReason) == ["PURCHASE", "RENEWAL", "RENEWAL"])
        #expect(Set(record.transactions.map(\.originalTransactionId)) == [steps[0].state.originalTransactionId])
        #expect(record.transactions[0].transactionId == steps[0].state.originalTransactionId)
        #expect(record.renewal.renewalDate == Self.start + 90 * Self.day)
        #expect(record.renewal.recentSubscriptionStartDate == Self.start)
    }

    @Test func billingGraceThenRetryRunsOutOnApplesSchedule() throws {
        let steps = try Self.run("billing-grace-expired")
        let end = Self.start + 30 * Self.day
        #expect(steps.map(\.state.now) == [Self.start, end, end + 16 * Self.day, end + 60 * Self.day])
        let failed = try #require(steps[1].state.subscription?.renewal)
        #expect(failed.isInBillingRetryPeriod == true && failed.expirationIntent == 2)
        #expect(failed.gracePeriodExpiresDate == end + 16 * Self.day)
        let expired = try #require(steps[3].state.subscription?.renewal)
        #expect(expired.isInBillingRetryPeriod == false && expired.status == 2 && expired.renewalDate == nil)
        // No new transaction while billing fails.
        #expect(steps[3].state.subscription?.transactions.count == 1)
    }

    @Test func offersShapeTheFirstTransaction() throws {
        let trial = try Self.run("free-trial").map(\.state)
        let first = try #require(trial[0].subscription?.current)
        #expect(first.offerType == 1 && first.offerDiscountType == "FREE_TRIAL" && first.price == 0)
        #expect(first.expiresDate == Self.start + 7 * Self.day && first.offerPeriod == "P1W")
        let paid = try #require(trial[1].subscription?.current)
        #expect(paid.offerType == nil && paid.price == 9_990 && paid.expiresDate == Self.start + 37 * Self.day)
        let promotional = try #require(try Self.run("promotional-offer").first?.state.subscription?.current)
        #expect(promotional.offerType == 2 && promotional.offerIdentifier == "\(Self.bundleId).promo.welcome")
        let code = try #require(try Self.run("offer-code").first?.state.subscription?.current)
        #expect(code.offerType == 3 && code.offerDiscountType == "PAY_UP_FRONT" && code.price == 6_990)
        let introductory = try #require(try Self.run("introductory-offer").first?.state.subscription?.current)
        #expect(introductory.offerType == 1 && introductory.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(introductory.offerIdentifier == nil && introductory.price == 5_000)
    }

    @Test func upgradeIsImmediateAndDowngradeWaitsForTheRenewal() throws {
        let upgrade = try Self.run("upgrade")
        let upgraded = try #require(upgrade[1].state.subscription)
        #expect(upgraded.transactions.count == 2 && upgraded.transactions[0].isUpgraded)
        #expect(upgraded.current.productId == "\(Self.bundleId).pro.monthly")
        #expect(upgraded.current.purchaseDate == Self.start + 10 * Self.day)
        #expect(upgraded.current.expiresDate == Self.start + 40 * Self.day)
        #expect(upgrade[1].notifications[0].transaction.transactionId == upgraded.current.transactionId)

        let downgrade = try Self.run("downgrade")
        let pending = try #require(downgrade[1].state.subscription)
        #expect(pending.current.productId == "\(Self.bundleId).pro.monthly")
        #expect(pending.renewal.autoRenewProductId == "\(Self.bundleId).premium.monthly")
        #expect(pending.renewal.productId == "\(Self.bundleId).pro.monthly")
        let renewed = try #require(downgrade[2].state.subscription)
        #expect(renewed.current.productId == "\(Self.bundleId).premium.monthly" && renewed.current.price == 9_990)

        let crossgrade = try Self.run("crossgrade")
        let yearly = try #require(crossgrade[2].state.subscription?.current)
        #expect(yearly.productId == "\(Self.bundleId).premium.yearly")
        #expect(yearly.expiresDate == Self.start + 30 * Self.day + 365 * Self.day)
    }

    @Test func priceIncreaseConsentSetsTheRenewalPrice() throws {
        let steps = try Self.run("price-increase-accepted")
        #expect(steps[1].state.subscription?.renewal.priceIncreaseStatus == 0)
        #expect(steps[1].state.subscription?.renewal.renewalPrice == 11_990)
        #expect(steps[2].state.subscription?.renewal.priceIncreaseStatus == 1)
        #expect(steps[3].state.subscription?.current.price == 11_990)
        let declined = try Self.run("price-increase-declined")
        #expect(declined[2].state.subscription?.renewal.expirationIntent == 3)
        #expect(declined[2].state.subscription?.renewal.autoRenewStatus == 0)
    }

    @Test func refundOfAnEarlierPeriodCarriesTheOlderTransaction() throws {
        let steps = try Self.run("refund-earlier-period")
        let refund = try #require(steps[3].notifications.first)
        let record = try #require(steps[3].state.subscription)
        #expect(refund.transaction.transactionId == record.transactions[0].transactionId)
        #expect(refund.transaction.revocationDate == Self.start + 63 * Self.day)
        #expect(refund.transaction.revocationType == "REFUND_FULL")
        #expect(record.current.revocationDate == nil && refund.status == 1)
        // A newer signedDate on an older transaction: the current one is still the latest purchase.
        #expect(refund.signedDate > record.current.purchaseDate)

        let current = try Self.run("refund-current-period")
        #expect(current[2].state.subscription?.renewal.autoRenewStatus == 0)
        #expect(current[2].notifications[0].transaction.revocationDate == Self.start + 35 * Self.day)
    }

    @Test func refundReversalClearsTheRevocationInANewerSnapshot() throws {
        let steps = try Self.run("refund-reversed")
        let refunded = try #require(steps[1].notifications.first?.transaction)
        let reversed = try #require(steps[2].notifications.first?.transaction)
        #expect(refunded.transactionId == reversed.transactionId)
        #expect(refunded.revocationDate != nil && reversed.revocationDate == nil)
        #expect(reversed.revocationType == nil && reversed.revocationPercentage == nil)
        #expect(steps[2].notifications[0].signedDate > steps[1].notifications[0].signedDate)
        #expect(steps[2].state.subscription?.renewal.autoRenewStatus == 1)
    }

    @Test func familyMembersGetRecordsOfTheirOwnAndLoseOnlyTheirs() throws {
        let steps = try Self.run("family-sharing")
        let purchaser = try #require(steps[3].state.subscription)
        let member = try #require(steps[3].state.familyMembers.first)
        #expect(member.originalTransactionId != purchaser.originalTransactionId)
        #expect(member.renewal.appTransactionId != purchaser.renewal.appTransactionId)
        #expect(
            member.transactions.allSatisfy { $0.inAppOwnershipType == "FAMILY_SHARED" && $0.appAccountToken == nil })
        #expect(member.transactions.count == 2)  // shared, then renewed with the purchaser
        #expect(member.current.expiresDate == purchaser.current.expiresDate)
        #expect(member.status(at: steps[3].state.now) == 5 && purchaser.status(at: steps[3].state.now) == 1)
        #expect(member.current.revocationType == "FAMILY_REVOKE")
        #expect(steps[3].notifications.map(\.transaction.originalTransactionId) == [member.originalTransactionId])
        // Each customer sees its own subscription only.
        #expect(
            steps[3].state.customerSubscriptions(owning: member.current.transactionId)?.map(\.originalTransactionId)
                == [member.originalTransactionId])
        #expect(
            steps[3].state.customerSubscriptions(owning: purchaser.originalTransactionId)?.map(\.originalTransactionId)
                == [purchaser.originalTransactionId])
    }

    @Test func familyMembersFollowTheirPurchaser() throws {
        var state = Self.state()
        var sent: [[String]] = []
        for step in [
            LifecycleStep(.buy(product: "premium.monthly", offer: nil)), LifecycleStep(.shareWithFamily),
            LifecycleStep(.extendRenewal(days: 7), after: .days(2)), LifecycleStep(.disableAutoRenew),
            LifecycleStep(.expire, after: .toExpiry),
        ] {
            let transition = try state.applying(step)
            sent.append(Self.labels(transition))
            state = transition.state
            guard let member = state.familyMembers.first else { continue }
            #expect(member.current.expiresDate == state.subscription?.current.expiresDate)
            #expect(member.renewal.autoRenewStatus == state.subscription?.renewal.autoRenewStatus)
        }
        #expect(sent.dropFirst(2).allSatisfy { $0.count == 2 })  // purchaser, then member
        #expect(state.subscription?.current.expiresDate == Self.start + 37 * Self.day)
        #expect(state.records.map { $0.status(at: state.now) } == [2, 2])
        #expect(throws: LifecycleStepError.self) {
            try state.applying(LifecycleStep(.buy(product: "premium.monthly", offer: nil), after: .days(400)))
                .state.applying(LifecycleStep(.shareWithFamily)).state.applying(LifecycleStep(.shareWithFamily))
                .state.applying(LifecycleStep(.shareWithFamily)).state.applying(LifecycleStep(.shareWithFamily))
                .state.applying(LifecycleStep(.shareWithFamily))
        }
    }

    @Test func oneTimePurchasesHaveNoRenewalInfo() throws {
        let steps = try Self.run("non-consumable")
        let charge = try #require(steps[0].notifications.first)
        #expect(charge.renewal == nil && charge.transaction.kind == .nonConsumable)
        #expect(charge.transaction.expiresDate == nil && charge.transaction.webOrderLineItemId == nil)
        #expect(steps[1].notifications.first?.transaction.revocationDate == Self.start + 5 * Self.day)
        #expect(steps[1].state.customerSubscriptions(owning: charge.transaction.transactionId)?.isEmpty == true)
        let pass = try #require(try Self.run("non-renewing-subscription").first?.notifications.first?.transaction)
        #expect(pass.kind == .nonRenewing && pass.expiresDate == nil)
    }

    @Test func stepsOutOfOrderAreRefusedAndChangeNothing() throws {
        let fresh = Self.state()
        for event: LifecycleEvent in [.renew, .expire, .recover, .refund(.currentPeriod), .shareWithFamily] {
            #expect(throws: LifecycleStepError.self) { try fresh.applying(LifecycleStep(event)) }
        }
        let bought = try fresh.applying(LifecycleStep(.buy(product: "premium.monthly", offer: nil))).state
        let refused: [LifecycleStep] = [
            LifecycleStep(.renew, after: .days(10)),  // before the period ends
            LifecycleStep(.buy(product: "premium.monthly", offer: nil)),  // already subscribed
            LifecycleStep(.expire, after: .toExpiry),  // auto-renew still on
            LifecycleStep(.upgrade(to: "premium.yearly")),  // same level: a cross-grade
            LifecycleStep(.downgrade(to: "news.monthly")),  // another group
            LifecycleStep(.buy(product: "no.such.product", offer: nil)),
            LifecycleStep(.extendRenewal(days: 91)),
            LifecycleStep(.enableAutoRenew),  // already on
            LifecycleStep(.expireGracePeriod, after: .toGracePeriodEnd),
            LifecycleStep(.renew, after: .by(milliseconds: -1)),
        ]
        for step in refused {
            #expect(throws: LifecycleStepError.self, "\(step)") { try bought.applying(step) }
        }
        let owned = try fresh.applying(LifecycleStep(.purchase(product: "unlock.lifetime"))).state
        #expect(throws: LifecycleStepError.self) {
            try owned.applying(LifecycleStep(.purchase(product: "unlock.lifetime")))
        }
    }

    @Test func idsAreKnownAtTheStartAndApartFromGeneratedOnes() throws {
        let first = Self.state(number: 0)
        let second = Self.state(number: 1)
        #expect(first.originalTransactionId != second.originalTransactionId)
        #expect(
            first.originalTransactionId.count == 16 && TransactionIdentifier.isWellFormed(first.originalTransactionId))
        let production = Self.state(number: 0, environment: .production)
        #expect(production.originalTransactionId.hasPrefix("2950") && first.originalTransactionId.hasPrefix("1950"))
        // Deterministic: the same number and seed give the same ids and notification UUIDs.
        let again = try Self.state(number: 0).applying(LifecycleStep(.buy(product: "premium.monthly", offer: nil)))
        let once = try first.applying(LifecycleStep(.buy(product: "premium.monthly", offer: nil)))
        #expect(again == once)
        #expect(once.notifications[0].transaction.transactionId == first.originalTransactionId)
    }

    @Test func advancesParseAndPrint() {
        for text in ["0", "250ms", "90s", "15m", "12h", "30d", "expiry", "gracePeriodEnd", "billingRetryEnd"] {
            #expect(LifecycleAdvance(text: text)?.text == text)
        }
        for text in ["", "-1d", "1w", "d", "1.5d", "99999999999d"] { #expect(LifecycleAdvance(text: text) == nil) }
        #expect(LifecycleAdvance(text: "60m") == .hours(1))
    }

    @Test func stepsReadBackFromTheirJSON() throws {
        for lifecycle in Lifecycle.all {
            for step in lifecycle.steps {
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(step.json.encoded)) as? [String: Any])
                #expect(try LifecycleStep(json: object) == step)
            }
        }
        #expect(throws: LifecycleStepError.self) { try LifecycleStep(json: ["step": "renew", "product": "x"]) }
        #expect(throws: LifecycleStepError.self) { try LifecycleStep(json: ["step": "teleport"]) }
        #expect(throws: LifecycleStepError.self) { try LifecycleStep(json: ["step": "buy"]) }
        #expect(throws: LifecycleStepError.self) { try LifecycleStep(json: ["step": "extendRenewal", "days": 0]) }
        #expect(throws: LifecycleStepError.self) { try LifecycleStep(json: ["step": "renew", "advance": "soon"]) }
    }
}
