import ProtoCodec
import SubscriptionState
import Testing

/// Refunds under both policies, refunds of an earlier period, and which transaction is current after an
/// upgrade, a downgrade or a crossgrade.
@Suite struct RefundAndProductChangeTests {
    typealias S = Snapshots
    let entitlements: [String: Set<String>] = [
        "pro": ["basic.monthly", "premium.monthly"], "extras": ["premium.monthly"],
    ]

    /// Two periods: 200 (days 0–30) and 201 (days 30–60), auto-renew on.
    func twoPeriods() throws -> SubscriptionRecord {
        var record = SubscriptionRecord(key: S.key("200"))
        try record.apply(
            transaction: S.transaction("200", original: "200", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            renewalInfo: S.renewal(original: "200", signed: S.at(0)), source: .notification, nowMillis: S.at(0))
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(30)),
            renewalInfo: S.renewal(original: "200", signed: S.at(30)), source: .notification, nowMillis: S.at(30))
        return record
    }

    @Test func refundOfTheCurrentPeriodRevokesAtOnceByDefault() throws {
        var record = try twoPeriods()
        let refund = S.transaction(
            "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), revoked: S.at(40))
        #expect(try record.apply(transaction: refund, source: .notification, nowMillis: S.at(40)))
        let policy = SubscriptionPolicy(refundPolicy: .immediate, entitlements: entitlements)
        let state = record.state(at: S.at(40), policy: policy)
        #expect(state.status == .revoked)
        #expect(!state.entitled)
        #expect(state.entitlements.isEmpty)
        #expect(state.revocationDateMillis == S.at(40))
        #expect(!state.needsConfirmation)
        #expect(record.nextTransitionMillis(at: S.at(40), policy: policy) == nil)
    }

    @Test func refundUntilExpiryKeepsAccessToTheEndOfThePeriod() throws {
        var record = try twoPeriods()
        let refund = S.transaction(
            "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), revoked: S.at(40))
        try record.apply(transaction: refund, source: .notification, nowMillis: S.at(40))
        let policy = SubscriptionPolicy(refundPolicy: .untilExpiry, entitlements: entitlements)
        let during = record.state(at: S.at(60, plus: -1), policy: policy)
        #expect(during.status == .revoked, "Apple's status does not depend on the policy")
        #expect(during.entitled)
        #expect(during.entitlements == ["pro"])
        let after = record.state(at: S.at(60), policy: policy)
        #expect(after.status == .revoked)
        #expect(!after.entitled)
        #expect(record.nextTransitionMillis(at: S.at(40), policy: policy) == S.at(60))
    }

    @Test func refundOfAnEarlierPeriodLeavesTheCurrentOneActive() throws {
        var record = try twoPeriods()
        // REFUND (or CONSUMPTION_REQUEST) about period 200: an older transaction with a newer signedDate.
        let refund = S.transaction(
            "200", original: "200", purchased: S.at(0), expires: S.at(30), signed: S.at(45), revoked: S.at(45))
        #expect(try record.apply(transaction: refund, source: .notification, nowMillis: S.at(45)))
        let state = record.state(at: S.at(45), policy: SubscriptionPolicy(entitlements: entitlements))
        #expect(state.status == .active)
        #expect(state.entitled)
        #expect(state.transaction?.payload.transactionId == "201")
        #expect(state.revocationDateMillis == nil)
        #expect(record.transactions["200"]?.payload.revocationDateMillis == S.at(45), "the ledger keeps the refund")
    }

    @Test func refundReversedRestoresAccess() throws {
        var record = try twoPeriods()
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), revoked: S.at(40)),
            source: .notification, nowMillis: S.at(40))
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(41)),
            source: .notification, nowMillis: S.at(41))
        #expect(record.state(at: S.at(41), policy: .defaults).status == .active)
    }

    @Test func anUpgradeMakesTheNewProductCurrent() throws {
        var record = try twoPeriods()
        let upgraded = S.transaction(
            "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), upgraded: true)
        let premium = S.transaction(
            "202", original: "200", product: "premium.monthly", purchased: S.at(40), expires: S.at(70),
            signed: S.at(40))
        try record.apply(
            transaction: premium, renewalInfo: S.renewal(original: "200", product: "premium.monthly", signed: S.at(40)),
            source: .notification, nowMillis: S.at(40))
        try record.apply(transaction: upgraded, source: .appleRead, nowMillis: S.at(40))
        let state = record.state(at: S.at(41), policy: SubscriptionPolicy(entitlements: entitlements))
        #expect(state.status == .active)
        #expect(state.productId == "premium.monthly")
        #expect(state.expiresDateMillis == S.at(70))
        #expect(state.entitlements == ["extras", "pro"])
    }

    @Test func anUpgradedTransactionIsNeverCurrent() throws {
        // The upgraded transaction (purchased later than an earlier period) is skipped for the earlier one.
        var record = try twoPeriods()
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), upgraded: true),
            source: .appleRead, nowMillis: S.at(40))
        #expect(record.currentTransaction?.payload.transactionId == "200")
    }

    @Test func onlyUpgradedTransactionsKnownNeedsConfirmation() throws {
        var record = SubscriptionRecord(key: S.key("200"))
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(40), upgraded: true),
            source: .appleRead, nowMillis: S.at(40))
        let state = record.state(at: S.at(41), policy: .defaults)
        #expect(state.transaction?.payload.transactionId == "201")
        #expect(state.needsConfirmation, "the upgrade's own transaction is missing")
    }

    @Test func aDowngradeWaitsForTheNextRenewal() throws {
        var record = SubscriptionRecord(key: S.key("300"))
        try record.apply(
            transaction: S.transaction(
                "300", original: "300", product: "premium.monthly", purchased: S.at(0), expires: S.at(30),
                signed: S.at(0)),
            renewalInfo: S.renewal(original: "300", product: "premium.monthly", signed: S.at(0)),
            source: .notification, nowMillis: S.at(0))
        try record.apply(
            renewalInfo: S.renewal(
                original: "300", product: "premium.monthly", autoRenewProduct: "basic.monthly", signed: S.at(10)),
            source: .notification, nowMillis: S.at(10))
        let policy = SubscriptionPolicy(entitlements: entitlements)
        let pending = record.state(at: S.at(11), policy: policy)
        #expect(pending.productId == "premium.monthly")
        #expect(pending.autoRenewProductId == "basic.monthly")
        #expect(pending.entitlements == ["extras", "pro"])
        try record.apply(
            transaction: S.transaction(
                "301", original: "300", purchased: S.at(30), expires: S.at(60), signed: S.at(30)),
            renewalInfo: S.renewal(original: "300", signed: S.at(30)), source: .notification, nowMillis: S.at(30))
        let renewed = record.state(at: S.at(31), policy: policy)
        #expect(renewed.productId == "basic.monthly")
        #expect(renewed.entitlements == ["pro"])
    }

    @Test func aCrossgradeIsChosenByPurchaseDateNotArrival() throws {
        var record = try twoPeriods()
        let yearly = S.transaction(
            "202", original: "200", product: "basic.yearly", purchased: S.at(60), expires: S.at(425), signed: S.at(60))
        // The new period arrives first; a CONSUMPTION_REQUEST about period 201, signed later, arrives next.
        try record.apply(transaction: yearly, source: .notification, nowMillis: S.at(60))
        try record.apply(
            transaction: S.transaction(
                "201", original: "200", purchased: S.at(30), expires: S.at(60), signed: S.at(70)),
            source: .notification, nowMillis: S.at(70))
        let state = record.state(at: S.at(70), policy: .defaults)
        #expect(state.productId == "basic.yearly")
        #expect(state.expiresDateMillis == S.at(425))
    }
}
