import ProtoCodec
import SubscriptionState
import Testing

/// A customer's entitlements across subscription groups and one-time purchases, and Family Sharing.
@Suite struct CustomerViewTests {
    typealias S = Snapshots
    /// Many-to-many: `all` comes from either subscription or the lifetime purchase; `news` from the monthly
    /// subscription only; `video` from the yearly one only.
    let policy = SubscriptionPolicy(entitlements: [
        "all": ["news.monthly", "video.yearly", "lifetime"],
        "news": ["news.monthly"],
        "video": ["video.yearly"],
        "tips": ["tips.pack"],
        "archive": ["archive.90days"],
    ])

    func subscription(
        _ id: String, product: String, expires: Int64, revoked: Int64? = nil, ownership: InAppOwnershipType = .purchased
    ) throws -> SubscriptionRecord {
        var record = SubscriptionRecord(key: S.key(id))
        try record.apply(
            transaction: S.transaction(
                id, original: id, product: product, purchased: S.at(0), expires: expires, signed: S.at(0),
                revoked: revoked, ownership: ownership),
            renewalInfo: S.renewal(original: id, product: product, autoRenew: false, signed: S.at(0)),
            source: .notification, nowMillis: S.at(0))
        return record
    }

    @Test func anEntitlementLastsUntilTheLatestOfItsActiveSources() throws {
        let news = try subscription("600", product: "news.monthly", expires: S.at(30))
        let video = try subscription("700", product: "video.yearly", expires: S.at(365))
        let view = CustomerView(subscriptions: [news, video], purchases: [])
        let now = view.entitlements(at: S.at(10), policy: policy)
        #expect(now.map(\.name) == ["all", "news", "video"])
        let all = try #require(now.first)
        #expect(all.active)
        #expect(all.expiresDateMillis == S.at(365))
        #expect(all.originalTransactionIds == ["600", "700"])
        #expect(all.productIds == ["news.monthly", "video.yearly"])
        #expect(now[1].expiresDateMillis == S.at(30))
        #expect(now[2].expiresDateMillis == S.at(365))

        let later = view.entitlements(at: S.at(40), policy: policy)
        #expect(later[0].active)
        #expect(later[0].originalTransactionIds == ["700"], "only the sources that still grant it")
        #expect(later[0].productIds == ["video.yearly"])
        #expect(!later[1].active)
        #expect(later[1].expiresDateMillis == S.at(30), "an inactive entitlement says when it ended")
        #expect(later[1].originalTransactionIds == ["600"])
    }

    @Test func oneTimePurchasesGrantUntilRevokedAndConsumablesNothing() throws {
        let news = try subscription("600", product: "news.monthly", expires: S.at(30))
        let lifetime = S.transaction(
            "800", original: "800", product: "lifetime", purchased: S.at(5), expires: nil, signed: S.at(5),
            type: .nonConsumable)
        let tips = S.transaction(
            "801", original: "801", product: "tips.pack", purchased: S.at(6), expires: nil, signed: S.at(6),
            type: .consumable)
        let archive = S.transaction(
            "802", original: "802", product: "archive.90days", purchased: S.at(7), expires: nil, signed: S.at(7),
            type: .nonRenewable)
        let view = CustomerView(subscriptions: [news], purchases: [lifetime, tips, archive, lifetime])
        #expect(view.purchases == [lifetime, archive])
        let entitlements = view.entitlements(at: S.at(1000), policy: policy)
        #expect(entitlements.map(\.name) == ["all", "archive", "news"])
        #expect(entitlements[0].active)
        #expect(entitlements[0].expiresDateMillis == nil, "a non-consumable has no end")
        #expect(entitlements[0].originalTransactionIds == ["800"])
        #expect(entitlements[1].active)
        #expect(entitlements[1].expiresDateMillis == nil)
        #expect(!entitlements[2].active)

        let refunded = S.transaction(
            "800", original: "800", product: "lifetime", purchased: S.at(5), expires: nil, signed: S.at(9),
            revoked: S.at(9), type: .nonConsumable)
        let afterRefund = CustomerView(subscriptions: [news], purchases: [refunded, lifetime])
        #expect(afterRefund.purchases == [refunded], "the newest snapshot of each purchase")
        let all = try #require(afterRefund.entitlements(at: S.at(10), policy: policy).first)
        #expect(all.active, "the subscription still grants it")
        #expect(all.originalTransactionIds == ["600"])
        #expect(all.expiresDateMillis == S.at(30))
        #expect(!afterRefund.entitlements(at: S.at(31), policy: policy)[0].active)
    }

    @Test func aGracePeriodCountsToItsEnd() throws {
        var news = try subscription("600", product: "news.monthly", expires: S.at(30))
        try news.apply(
            renewalInfo: S.renewal(
                original: "600", product: "news.monthly", inBillingRetry: true, graceEnds: S.at(46), signed: S.at(30)),
            source: .notification, nowMillis: S.at(30))
        let news2 = try #require(
            CustomerView(subscriptions: [news], purchases: []).entitlements(at: S.at(31), policy: policy).last)
        #expect(news2.name == "news")
        #expect(news2.active)
        #expect(news2.expiresDateMillis == S.at(46))
    }

    @Test func unmappedProductsGrantNothing() throws {
        let other = try subscription("650", product: "unmapped.monthly", expires: S.at(30))
        #expect(CustomerView(subscriptions: [other], purchases: []).entitlements(at: S.at(1), policy: policy).isEmpty)
    }

    @Test func aFamilyMembersRecordIsItsOwnAndARevokeEndsOnlyIt() throws {
        var purchaser = try subscription("900", product: "news.monthly", expires: S.at(30))
        var member = try subscription("950", product: "news.monthly", expires: S.at(30), ownership: .familyShared)
        #expect(member.state(at: S.at(1), policy: policy).ownershipType == .familyShared)
        // REVOKE: the member's own transaction, revoked; Apple signs it for the member's original id only.
        let revoke = S.transaction(
            "950", original: "950", product: "news.monthly", purchased: S.at(0), expires: S.at(30), signed: S.at(10),
            revoked: S.at(10), ownership: .familyShared)
        #expect(throws: SnapshotRefusal.self) {
            try purchaser.apply(transaction: revoke, source: .notification, nowMillis: S.at(10))
        }
        try member.apply(transaction: revoke, source: .notification, nowMillis: S.at(10))
        #expect(member.state(at: S.at(11), policy: policy).status == .revoked)
        #expect(!member.state(at: S.at(11), policy: policy).entitled)
        #expect(purchaser.state(at: S.at(11), policy: policy).status == .active)
        #expect(purchaser.version == 1)
        let memberView = CustomerView(subscriptions: [member], purchases: [])
        #expect(memberView.entitlements(at: S.at(11), policy: policy).allSatisfy { !$0.active })
    }
}
