import GatewayFoundation
import ProtoCodec
import SubscriptionState
import Testing

/// A subscription's events as a consumer sees them: every snapshot goes through the reducer, and every change
/// through `SubscriptionEventMaker` (ids from a counter), as a store does in one commit.
private struct Watched {
    var record: SubscriptionRecord
    var cursor: SubscriptionEventCursor?
    var events: [SubscriptionEvent] = []
    var ids = 0
    let policy: SubscriptionPolicy

    init(_ original: String, policy: SubscriptionPolicy = Watched.policy) {
        record = SubscriptionRecord(key: Snapshots.key(original))
        self.policy = policy
    }

    static let policy = SubscriptionPolicy(
        entitlements: ["pro": ["basic.monthly", "premium.monthly"], "premium": ["premium.monthly"]])

    /// Applies snapshots at `now`; returns the types (and entitlements) of the events the change made.
    @discardableResult
    mutating func apply(
        _ transaction: SignedTransaction? = nil, _ renewal: SignedRenewalInfo? = nil, at now: Int64,
        cause: String = "n"
    ) throws -> [String] {
        let changed = try record.apply(
            transaction: transaction, renewalInfo: renewal, source: .notification, nowMillis: now)
        guard changed else { return [] }
        return make(at: now, cause: cause)
    }

    /// A renewal info alone at `now`.
    @discardableResult
    mutating func apply(_ renewal: SignedRenewalInfo, at now: Int64) throws -> [String] {
        try apply(nil, renewal, at: now)
    }

    /// Time alone at `now`, as the store's timer does.
    mutating func tick(at now: Int64) -> [String] { make(at: now, cause: "time") }

    private mutating func make(at now: Int64, cause: String) -> [String] {
        var counter = ids
        let outcome = SubscriptionEventMaker.events(
            of: record, after: cursor, at: now,
            context: SubscriptionEventContext(app: "reader", policy: policy, cause: cause),
            newEventID: {
                counter += 1
                return "event-\(counter)"
            })
        ids = counter
        cursor = outcome.cursor
        events += outcome.events
        return outcome.events.map(Self.describe)
    }

    static func describe(_ event: SubscriptionEvent) -> String {
        let name = "\(event.type)"
        return event.entitlement.isEmpty ? name : "\(name):\(event.entitlement)"
    }
}

@Suite struct SubscriptionEventTests {
    typealias S = Snapshots

    @Test func aPurchaseRenewalsCancellationAndExpiryMakeOneEventEach() throws {
        var watched = Watched("100")
        let first = S.transaction("100", original: "100", purchased: S.at(0), expires: S.at(30), signed: S.at(0))
        #expect(
            try watched.apply(first, S.renewal(original: "100", signed: S.at(0)), at: S.at(0))
                == ["initialPurchase", "entitlementGranted:pro"])
        // The same snapshots again, and an older one: nothing changed, no event.
        #expect(try watched.apply(first, at: S.at(1)) == [])
        #expect(try watched.apply(S.renewal(original: "100", signed: S.at(-1)), at: S.at(1)) == [])
        let second = S.transaction("101", original: "100", purchased: S.at(30), expires: S.at(60), signed: S.at(30))
        #expect(try watched.apply(second, at: S.at(30)) == ["renewal"])
        #expect(
            try watched.apply(S.renewal(original: "100", autoRenew: false, signed: S.at(40)), at: S.at(40))
                == ["cancellation"])
        #expect(
            try watched.apply(S.renewal(original: "100", autoRenew: true, signed: S.at(41)), at: S.at(41))
                == ["uncancellation"])
        #expect(
            try watched.apply(S.renewal(original: "100", autoRenew: false, signed: S.at(42)), at: S.at(42))
                == ["cancellation"])
        // The period ends: the record says when, and time alone makes the expiration.
        #expect(watched.record.nextTransitionMillis(at: S.at(42), policy: Watched.policy) == S.at(60))
        #expect(watched.tick(at: S.at(59)) == [])
        #expect(watched.tick(at: S.at(60)) == ["expiration", "entitlementRevoked:pro"])
        #expect(watched.tick(at: S.at(61)) == [])
        // Sequences 1, 2, 3 … without gaps; each event knows the status before it and carries the state after.
        #expect(watched.events.map(\.sequence) == Array(1...UInt64(watched.events.count)))
        #expect(Set(watched.events.map(\.eventId)).count == watched.events.count)
        let expiration = try #require(watched.events.first { $0.type == .expiration })
        #expect(expiration.previousStatus == .active)
        #expect(expiration.subscription?.status == .expired)
        #expect(expiration.subscription?.entitled == false)
        #expect(expiration.cause == "time")
        #expect(expiration.app == "reader")
        #expect(expiration.originalTransactionId == "100")
        #expect(watched.events[0].previousStatus == .unspecified)
        #expect(watched.events[0].subscription?.entitlements == ["pro"])
    }

    @Test func aBillingIssueGracePeriodAndRecovery() throws {
        var watched = Watched("200")
        try watched.apply(
            S.transaction("200", original: "200", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            S.renewal(original: "200", signed: S.at(0)), at: S.at(0))
        #expect(
            try watched.apply(
                S.renewal(original: "200", inBillingRetry: true, graceEnds: S.at(36), signed: S.at(30)), at: S.at(30))
                == ["billingIssue"])
        #expect(watched.events.last?.subscription?.status == .billingGracePeriod)
        #expect(watched.tick(at: S.at(36)) == ["gracePeriodExpired", "entitlementRevoked:pro"])
        #expect(watched.events.last?.previousStatus == .billingGracePeriod)
        #expect(
            try watched.apply(
                S.transaction("201", original: "200", purchased: S.at(38), expires: S.at(68), signed: S.at(38)),
                S.renewal(original: "200", signed: S.at(38)), at: S.at(38))
                == ["billingRecovery", "entitlementGranted:pro"])
    }

    @Test func billingRetryThatEndsIsAnExpiration() throws {
        var watched = Watched("210")
        try watched.apply(
            S.transaction("210", original: "210", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            S.renewal(original: "210", inBillingRetry: true, signed: S.at(29)), at: S.at(29))
        #expect(watched.tick(at: S.at(30)) == ["entitlementRevoked:pro"])
        #expect(
            try watched.apply(
                S.renewal(
                    original: "210", autoRenew: false, inBillingRetry: false, intent: .billingError, signed: S.at(90)),
                at: S.at(90)) == ["expiration"])
    }

    @Test func aRefundAndItsReversal() throws {
        var watched = Watched("300")
        let bought = S.transaction("300", original: "300", purchased: S.at(0), expires: S.at(30), signed: S.at(0))
        try watched.apply(bought, S.renewal(original: "300", signed: S.at(0)), at: S.at(0))
        let refunded = S.transaction(
            "300", original: "300", purchased: S.at(0), expires: S.at(30), signed: S.at(5), revoked: S.at(5))
        #expect(try watched.apply(refunded, at: S.at(5)) == ["refund", "entitlementRevoked:pro"])
        #expect(watched.events.last?.subscription?.status == .revoked)
        let reversed = S.transaction("300", original: "300", purchased: S.at(0), expires: S.at(30), signed: S.at(6))
        #expect(try watched.apply(reversed, at: S.at(6)) == ["refundReversed", "entitlementGranted:pro"])
    }

    @Test func aRefundUnderUntilExpiryEndsAccessWithThePeriod() throws {
        var watched = Watched(
            "310", policy: SubscriptionPolicy(refundPolicy: .untilExpiry, entitlements: Watched.policy.entitlements))
        try watched.apply(
            S.transaction("310", original: "310", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            S.renewal(original: "310", signed: S.at(0)), at: S.at(0))
        let refunded = S.transaction(
            "310", original: "310", purchased: S.at(0), expires: S.at(30), signed: S.at(5), revoked: S.at(5))
        #expect(try watched.apply(refunded, at: S.at(5)) == ["refund"])
        #expect(watched.tick(at: S.at(30)) == ["expiration", "entitlementRevoked:pro"])
    }

    @Test func familySharingRevocation() throws {
        var watched = Watched("320")
        try watched.apply(
            S.transaction(
                "320", original: "320", purchased: S.at(0), expires: S.at(30), signed: S.at(0), ownership: .familyShared
            ),
            at: S.at(0))
        #expect(
            try watched.apply(
                S.transaction(
                    "320", original: "320", purchased: S.at(0), expires: S.at(30), signed: S.at(3), revoked: S.at(3),
                    ownership: .familyShared), at: S.at(3)) == ["revocation", "entitlementRevoked:pro"])
    }

    @Test func productChangesNowAndScheduledAndExtensionsAndPriceIncreases() throws {
        var watched = Watched("400")
        try watched.apply(
            S.transaction("400", original: "400", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            S.renewal(original: "400", signed: S.at(0)), at: S.at(0))
        // A scheduled downgrade: from the next renewal, no change of access now.
        #expect(
            try watched.apply(
                S.renewal(original: "400", autoRenewProduct: "basic.yearly", signed: S.at(2)), at: S.at(2))
                == ["productChange"])
        // An upgrade now: the new entitlement is granted before anything is taken away (here: nothing is).
        #expect(
            try watched.apply(
                S.transaction(
                    "401", original: "400", product: "premium.monthly", purchased: S.at(3), expires: S.at(33),
                    signed: S.at(3)), at: S.at(3)) == ["productChange", "entitlementGranted:premium"])
        // Apple extends the period: same transaction, later expiry.
        #expect(
            try watched.apply(
                S.transaction(
                    "401", original: "400", product: "premium.monthly", purchased: S.at(3), expires: S.at(40),
                    signed: S.at(4)), at: S.at(4)) == ["renewalExtended"])
        var increase = S.renewal(
            original: "400", product: "premium.monthly", autoRenewProduct: "basic.yearly", signed: S.at(5))
        increase.payload.priceIncreaseStatus = .notResponded
        increase.payload.renewalPriceMilliunits = 12_990
        #expect(try watched.apply(nil, increase, at: S.at(5)) == ["priceIncrease"])
        var consented = increase
        consented.payload.priceIncreaseStatus = .consented
        consented.payload.signedDateMillis = S.at(6)
        consented.payload.signedDate = S.timestamp(S.at(6))
        #expect(try watched.apply(nil, consented, at: S.at(6)) == ["priceIncrease"])
    }

    @Test func oneTimePurchasesMakeTheirOwnEvents() throws {
        let policy = SubscriptionPolicy(entitlements: ["lifetime": ["lifetime.unlock"]])
        let bought = S.transaction(
            "500", original: "500", product: "lifetime.unlock", purchased: S.at(0), expires: nil, signed: S.at(0),
            type: .nonConsumable)
        var ids = 0
        func next() -> String {
            ids += 1
            return "p-\(ids)"
        }
        let context = SubscriptionEventContext(app: "reader", policy: policy, cause: "app-posted")
        let first = SubscriptionEventMaker.events(
            ofPurchase: bought, after: nil, at: S.at(0), context: context, newEventID: next)
        #expect(first.events.map(Watched.describe) == ["nonConsumablePurchase", "entitlementGranted:lifetime"])
        #expect(first.events[0].purchase?.transactionId == "500")
        #expect(first.events[0].subscription == nil)
        let refunded = S.transaction(
            "500", original: "500", product: "lifetime.unlock", purchased: S.at(0), expires: nil, signed: S.at(2),
            revoked: S.at(2), type: .nonConsumable)
        let second = SubscriptionEventMaker.events(
            ofPurchase: refunded, after: first.cursor, at: S.at(2), context: context, newEventID: next)
        #expect(second.events.map(Watched.describe) == ["refund", "entitlementRevoked:lifetime"])
        #expect(second.events.map(\.sequence) == [3, 4])
        let renewing = S.transaction(
            "510", original: "510", product: "season.pass", purchased: S.at(0), expires: nil, signed: S.at(0),
            type: .nonRenewable)
        #expect(
            SubscriptionEventMaker.events(
                ofPurchase: renewing, after: nil, at: S.at(0), context: context, newEventID: next
            )
            .events.map(Watched.describe) == ["nonRenewingPurchase"])
        let consumable = S.transaction(
            "520", original: "520", product: "coins", purchased: S.at(0), expires: nil, signed: S.at(0),
            type: .consumable)
        #expect(
            SubscriptionEventMaker.events(
                ofPurchase: consumable, after: nil, at: S.at(0), context: context, newEventID: next
            )
            .events.isEmpty)
    }

    @Test func aRecordWithoutATransactionTellsNothingYet() throws {
        var watched = Watched("600")
        #expect(try watched.apply(nil, S.renewal(original: "600", signed: S.at(0)), at: S.at(0)) == [])
        #expect(watched.cursor?.sequence == 0)
        #expect(
            try watched.apply(
                S.transaction("600", original: "600", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
                at: S.at(1))
                == ["initialPurchase", "entitlementGranted:pro"])
    }

    /// Whatever order the snapshots of a lifecycle arrive in, a consumer ends with the same facts as one that saw
    /// them in order, and applying everything again makes no event.
    @Test(arguments: 0..<40) func eventsEndInTheSameFactsInAnyOrder(seed: UInt64) throws {
        let snapshots: [(SignedTransaction?, SignedRenewalInfo?)] = [
            (
                S.transaction("700", original: "700", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
                S.renewal(original: "700", signed: S.at(0))
            ),
            (S.transaction("701", original: "700", purchased: S.at(30), expires: S.at(60), signed: S.at(30)), nil),
            (nil, S.renewal(original: "700", autoRenew: false, signed: S.at(45))),
            (
                S.transaction(
                    "702", original: "700", product: "premium.monthly", purchased: S.at(50), expires: S.at(80),
                    signed: S.at(50)), nil
            ),
            (
                S.transaction(
                    "702", original: "700", product: "premium.monthly", purchased: S.at(50), expires: S.at(80),
                    signed: S.at(55), revoked: S.at(55)), nil
            ),
        ]
        let now = S.at(56)
        var inOrder = Watched("700")
        for (transaction, renewal) in snapshots { try inOrder.apply(transaction, renewal, at: now) }
        var generator = SplitMix64(seed: seed)
        var shuffled = Watched("700")
        for (transaction, renewal) in snapshots.shuffled(using: &generator) {
            try shuffled.apply(transaction, renewal, at: now)
        }
        #expect(shuffled.cursor?.facts == inOrder.cursor?.facts)
        for (transaction, renewal) in snapshots { #expect(try shuffled.apply(transaction, renewal, at: now) == []) }
        #expect(shuffled.events.map(\.sequence) == Array(1...UInt64(shuffled.events.count)))
    }

    @Test func factsSurviveTheirEncodingAndGarbageIsRefused() throws {
        var watched = Watched("800")
        try watched.apply(
            S.transaction("800", original: "800", purchased: S.at(0), expires: S.at(30), signed: S.at(0)),
            S.renewal(original: "800", signed: S.at(0)), at: S.at(0))
        let facts = try #require(watched.cursor?.facts)
        #expect(SubscriptionEventFacts(encoded: facts.encoded) == facts)
        let bytes = facts.encoded
        for cut in 0..<bytes.count { #expect(SubscriptionEventFacts(encoded: Array(bytes[..<cut])) == nil) }
        #expect(SubscriptionEventFacts(encoded: bytes + [0]) == nil)
        var generator = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            var noise = bytes
            noise[Int.random(in: 0..<noise.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            _ = SubscriptionEventFacts(encoded: noise)
        }
    }
}
