import ProtoCodec
import SubscriptionState
import Testing

/// Apple's five statuses, each entered and left at the exact instant its date says.
@Suite struct StatusTransitionTests {
    typealias S = Snapshots
    let policy = SubscriptionPolicy(entitlements: ["pro": ["basic.monthly", "premium.monthly"]])

    /// One period bought at day 0, ending at day 30, with the given renewal info.
    func record(renewal: SignedRenewalInfo?) throws -> SubscriptionRecord {
        var record = SubscriptionRecord(key: S.key("100"))
        let bought = S.transaction("100", original: "100", purchased: S.at(0), expires: S.at(30), signed: S.at(0))
        try record.apply(transaction: bought, renewalInfo: renewal, source: .notification, nowMillis: S.at(0))
        return record
    }

    @Test func activeUntilTheExpiryInstantThenExpired() throws {
        let record = try record(renewal: S.renewal(original: "100", autoRenew: false, signed: S.at(0)))
        let before = record.state(at: S.at(30, plus: -1), policy: policy)
        #expect(before.status == .active)
        #expect(before.entitled)
        #expect(before.entitlements == ["pro"])
        #expect(before.expiresDateMillis == S.at(30))
        #expect(!before.autoRenew)
        #expect(!before.needsConfirmation)
        let at = record.state(at: S.at(30), policy: policy)
        #expect(at.status == .expired)
        #expect(!at.entitled)
        #expect(at.entitlements.isEmpty)
        #expect(!at.needsConfirmation, "auto-renew was off: the expiry is known")
        #expect(record.nextTransitionMillis(at: S.at(1), policy: policy) == S.at(30))
        #expect(record.nextTransitionMillis(at: S.at(30), policy: policy) == nil)
    }

    @Test func graceUntilItsEndThenBillingRetry() throws {
        let failed = S.renewal(original: "100", inBillingRetry: true, graceEnds: S.at(46), signed: S.at(30))
        let record = try record(renewal: failed)
        #expect(record.state(at: S.at(30, plus: -1), policy: policy).status == .active)
        let inGrace = record.state(at: S.at(30), policy: policy)
        #expect(inGrace.status == .billingGracePeriod)
        #expect(inGrace.entitled)
        #expect(inGrace.inBillingRetry)
        #expect(inGrace.gracePeriodExpiresDateMillis == S.at(46))
        #expect(record.state(at: S.at(46, plus: -1), policy: policy).status == .billingGracePeriod)
        let retrying = record.state(at: S.at(46), policy: policy)
        #expect(retrying.status == .billingRetry)
        #expect(!retrying.entitled)
        #expect(!retrying.needsConfirmation, "Apple is retrying: nothing was missed")
        #expect(record.nextTransitionMillis(at: S.at(29), policy: policy) == S.at(30))
        #expect(record.nextTransitionMillis(at: S.at(30), policy: policy) == S.at(46))
        #expect(record.nextTransitionMillis(at: S.at(46), policy: policy) == nil)
    }

    @Test func billingRetryWithoutGrace() throws {
        let record = try record(renewal: S.renewal(original: "100", inBillingRetry: true, signed: S.at(30)))
        let state = record.state(at: S.at(30), policy: policy)
        #expect(state.status == .billingRetry)
        #expect(!state.entitled)
        #expect(state.gracePeriodExpiresDateMillis == nil)
    }

    @Test func graceDateWithoutBillingRetryIsNotGrace() throws {
        let record = try record(
            renewal: S.renewal(original: "100", autoRenew: false, graceEnds: S.at(46), signed: S.at(30)))
        #expect(record.state(at: S.at(31), policy: policy).status == .expired)
    }

    @Test func recoveryFromBillingRetryIsActiveAgain() throws {
        var record = try record(
            renewal: S.renewal(original: "100", inBillingRetry: true, graceEnds: S.at(46), signed: S.at(30)))
        let recovered = S.transaction("101", original: "100", purchased: S.at(50), expires: S.at(80), signed: S.at(50))
        try record.apply(
            transaction: recovered, renewalInfo: S.renewal(original: "100", signed: S.at(50)), source: .notification,
            nowMillis: S.at(50))
        let state = record.state(at: S.at(50), policy: policy)
        #expect(state.status == .active)
        #expect(state.transaction?.payload.transactionId == "101")
        #expect(state.expiresDateMillis == S.at(80))
        #expect(!state.inBillingRetry)
    }

    @Test func aMissedRenewalNeedsConfirmation() throws {
        let record = try record(renewal: S.renewal(original: "100", autoRenew: true, signed: S.at(0)))
        let state = record.state(at: S.at(30), policy: policy)
        #expect(state.status == .expired)
        #expect(state.needsConfirmation)
        #expect(!record.state(at: S.at(30, plus: -1), policy: policy).needsConfirmation)
    }

    @Test func appleSpeakingAfterTheExpiryConfirmsIt() throws {
        let signedAfter = try record(renewal: S.renewal(original: "100", autoRenew: true, signed: S.at(30)))
        #expect(!signedAfter.state(at: S.at(31), policy: policy).needsConfirmation)
        let withIntent = try record(
            renewal: S.renewal(original: "100", autoRenew: true, intent: .billingError, signed: S.at(1)))
        #expect(!withIntent.state(at: S.at(31), policy: policy).needsConfirmation)
        let noRenewalInfo = try record(renewal: nil)
        #expect(noRenewalInfo.state(at: S.at(31), policy: policy).needsConfirmation)
    }

    @Test func aRecordWithoutTransactionsIsUnknown() throws {
        var record = SubscriptionRecord(key: S.key("100"))
        try record.apply(
            renewalInfo: S.renewal(original: "100", signed: S.at(0)), source: .appleRead, nowMillis: S.at(0))
        let state = record.state(at: S.at(1), policy: policy)
        #expect(state.status == .unspecified)
        #expect(!state.entitled)
        #expect(state.needsConfirmation)
        #expect(state.autoRenew)
        #expect(record.nextTransitionMillis(at: S.at(1), policy: policy) == nil)
    }

    @Test func derivedFieldsComeFromTheCurrentTransactionAndRenewalInfo() throws {
        var record = SubscriptionRecord(key: S.key("100"))
        let bought = S.transaction(
            "100", original: "100", purchased: S.at(0), expires: S.at(30), signed: S.at(0), token: "")
        let renewal = S.renewal(
            original: "100", autoRenewProduct: "premium.monthly", signed: S.at(2),
            token: "7d2a1c52-8e2f-4f63-9a59-3c1d9c1f2b10")
        try record.apply(transaction: bought, renewalInfo: renewal, source: .appPosted, nowMillis: S.at(2))
        let state = record.state(at: S.at(3), policy: policy)
        #expect(state.key == S.key("100"))
        #expect(state.productId == "basic.monthly")
        #expect(state.subscriptionGroupIdentifier == "group.reader")
        #expect(state.autoRenewProductId == "premium.monthly")
        #expect(state.ownershipType == .purchased)
        #expect(state.appAccountToken == "7d2a1c52-8e2f-4f63-9a59-3c1d9c1f2b10", "the renewal info's, as a fallback")
        #expect(state.transaction == bought)
        #expect(state.renewalInfo == renewal)
        #expect(state.transactionSignedDateMillis == S.at(0))
        #expect(state.renewalSignedDateMillis == S.at(2))
        #expect(state.revocationDateMillis == nil)
        #expect(record.source == .appPosted)
        #expect(record.updatedAtMillis == S.at(2))
    }

    @Test func datesGivenOnlyAsTimestampsReadTheSame() throws {
        var bought = S.transaction("100", original: "100", purchased: S.at(0), expires: S.at(30), signed: S.at(0))
        bought.payload.expiresDateMillis = 0
        bought.payload.signedDateMillis = 0
        var record = SubscriptionRecord(key: S.key("100"))
        try record.apply(transaction: bought, source: .appleRead, nowMillis: S.at(0))
        #expect(record.state(at: S.at(30, plus: -1), policy: policy).status == .active)
        #expect(record.state(at: S.at(30), policy: policy).status == .expired)
        #expect(bought.signedDateMillis == S.at(0))
    }
}
