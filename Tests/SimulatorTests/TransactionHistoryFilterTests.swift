import Foundation
import HTTPServer
import Testing

@testable import Simulator

@Suite struct TransactionHistoryFilterTests {
    /// Every transaction id the filtered history returns (all pages).
    static func ids(_ fixture: SimulatorFixture, _ customer: SimulatedCustomer, _ query: String) async -> Set<String> {
        Set(await TransactionHistoryPagingTests.allPages(fixture, customer.appTransactionId, query: query).ids)
    }

    static func expect(
        _ fixture: SimulatorFixture, _ query: String, _ admits: (SimulatedTransaction) -> Bool
    ) async {
        var matchedSomething = false
        for customer in fixture.dataset.customers.prefix(6) {
            let expected = Set(customer.transactions.filter(admits).map(\.transactionId))
            matchedSomething = matchedSomething || !expected.isEmpty
            #expect(await ids(fixture, customer, query) == expected, "query \(query)")
        }
        #expect(matchedSomething, "query \(query) matched nothing in the sample")
    }

    @Test func dateRangeIsStartInclusiveEndExclusive() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let start = customer.transactions[5].purchaseDate
        let end = customer.transactions[15].purchaseDate
        let got = await Self.ids(fixture, customer, "startDate=\(start)&endDate=\(end)")
        let expected = customer.transactions.filter { $0.purchaseDate >= start && $0.purchaseDate < end }
        #expect(got == Set(expected.map(\.transactionId)))
        #expect(got.contains(customer.transactions[5].transactionId))
        #expect(!got.contains(customer.transactions[15].transactionId))
    }

    @Test func repeatedProductIdsAndTypes() async {
        let fixture = SimulatorFixture()
        let bundle = fixture.app.bundleId
        await Self.expect(fixture, "productId=\(bundle).coins.100&productId=\(bundle).remove.ads") {
            [bundle + ".coins.100", bundle + ".remove.ads"].contains($0.productId)
        }
        await Self.expect(fixture, "productType=CONSUMABLE&productType=NON_CONSUMABLE") {
            $0.kind == .consumable || $0.kind == .nonConsumable
        }
        await Self.expect(fixture, "productType=AUTO_RENEWABLE") { $0.kind == .autoRenewable }
    }

    @Test func subscriptionGroupsOwnershipAndRevocation() async {
        let fixture = SimulatorFixture(customers: 40)
        let catalog = fixture.dataset.catalog
        await Self.expect(fixture, "subscriptionGroupIdentifier=\(catalog.premiumGroup)") {
            $0.subscriptionGroupIdentifier == catalog.premiumGroup
        }
        await Self.expect(
            fixture,
            "subscriptionGroupIdentifier=\(catalog.premiumGroup)&subscriptionGroupIdentifier=\(catalog.newsGroup)"
        ) { $0.subscriptionGroupIdentifier != nil }
        await Self.expect(fixture, "inAppOwnershipType=PURCHASED") { $0.inAppOwnershipType == "PURCHASED" }
        await Self.expect(fixture, "revoked=false") { !$0.isRevoked }
        await Self.expect(fixture, "excludeRevoked=true") { !$0.isRevoked }
        let shared = fixture.dataset.customers.first {
            $0.transactions.contains { $0.inAppOwnershipType == "FAMILY_SHARED" }
        }
        let revoked = fixture.dataset.customers.first { $0.transactions.contains(where: \.isRevoked) }
        if let shared {
            #expect(
                await Self.ids(fixture, shared, "inAppOwnershipType=FAMILY_SHARED")
                    == Set(shared.transactions.filter { $0.inAppOwnershipType == "FAMILY_SHARED" }.map(\.transactionId))
            )
        }
        #expect(revoked != nil)
        if let revoked {
            #expect(
                await Self.ids(fixture, revoked, "revoked=true")
                    == Set(revoked.transactions.filter(\.isRevoked).map(\.transactionId)))
        }
    }

    @Test(arguments: [
        ("startDate=yesterday", 4_000_015), ("endDate=-5", 4_000_016), ("startDate=10&endDate=10", 4_000_013),
        ("startDate=20&endDate=10", 4_000_013), ("sort=UP", 4_000_021), ("sort=ASCENDING&sort=DESCENDING", 4_000_021),
        ("productType=SUBSCRIPTION", 4_000_022), ("productType=CONSUMABLE&productType=consumable", 4_000_022),
        ("productId=", 4_000_023), ("subscriptionGroupIdentifier=", 4_000_024),
        ("inAppOwnershipType=SHARED", 4_000_026),
        ("revoked=True", 4_000_030), ("revoked=yes", 4_000_030), ("excludeRevoked=1", 4_000_025),
        ("revision=nope", 4_000_005),
    ])
    func badParametersAnswer400WithApplesCode(query: String, code: Int) async {
        let fixture = SimulatorFixture()
        let response = await fixture.send(
            "GET", "/inApps/v2/history/\(fixture.busiestCustomer.transactions[0].transactionId)?\(query)")
        #expect(response.status == 400)
        #expect(response.headers.contains { $0.name == "content-type" && $0.value == "application/json" })
        #expect(SimulatorFixture.object(response)["errorCode"] as? Int == code)
    }

    @Test func transactionIdErrors() async {
        let fixture = SimulatorFixture()
        let malformed = await fixture.send("GET", "/inApps/v2/history/abc123")
        #expect(malformed.status == 400)
        #expect(SimulatorFixture.object(malformed)["errorCode"] as? Int == 4_000_006)
        let unknown = await fixture.send("GET", "/inApps/v2/history/1999999999999999")
        #expect(unknown.status == 404)
        #expect(SimulatorFixture.object(unknown)["errorCode"] as? Int == 4_040_010)
        // A production id is unknown in sandbox, as at Apple.
        let id = fixture.busiestCustomer.transactions[0].transactionId
        let sandbox = await fixture.send("GET", "/sandbox/inApps/v2/history/\(id)")
        #expect(SimulatorFixture.object(sandbox)["errorCode"] as? Int == 4_040_010)
        let info = await fixture.send("GET", "/inApps/v1/transactions/1999999999999999")
        #expect(SimulatorFixture.object(info)["errorCode"] as? Int == 4_040_010)
    }
}
