import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

@testable import Simulator

@Suite struct TransactionHistoryPagingTests {
    /// Pages through the history and returns the transaction ids in order with the page count.
    static func allPages(_ fixture: SimulatorFixture, _ id: String, query: String = "", version: String = "v2")
        async -> (ids: [String], pages: Int)
    {
        var ids: [String] = []
        var revision: String?
        var pages = 0
        repeat {
            var target = "/inApps/\(version)/history/\(id)?\(query)"
            if let revision { target += "&revision=\(revision)" }
            let response = await fixture.send("GET", target)
            #expect(response.status == 200)
            let body = SimulatorFixture.object(response)
            let signed = body["signedTransactions"] as? [String] ?? []
            #expect(signed.count <= 20)
            ids += signed.map { SimulatorFixture.payload($0)["transactionId"] as? String ?? "?" }
            pages += 1
            revision = body["revision"] as? String
            #expect(revision != nil)
            if body["hasMore"] as? Bool != true { break }
        } while pages < 50
        return (ids, pages)
    }

    static func expectedOrder(_ customer: SimulatedCustomer, ascending: Bool) -> [String] {
        let sorted = customer.transactions.sorted {
            ($0.modifiedDate, UInt64($0.transactionId) ?? 0) < ($1.modifiedDate, UInt64($1.transactionId) ?? 0)
        }.map(\.transactionId)
        return ascending ? sorted : sorted.reversed()
    }

    @Test func ascendingReturnsEveryTransactionOnceInModificationOrder() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        #expect(customer.transactions.count > 40)
        let result = await Self.allPages(fixture, customer.transactions[0].originalTransactionId)
        #expect(result.ids == Self.expectedOrder(customer, ascending: true))
        #expect(Set(result.ids).count == customer.transactions.count)
        #expect(result.pages == (customer.transactions.count + 19) / 20)
    }

    @Test func descendingReturnsEveryTransactionOnceNewestFirst() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let result = await Self.allPages(fixture, customer.appTransactionId, query: "sort=DESCENDING")
        #expect(result.ids == Self.expectedOrder(customer, ascending: false))
    }

    @Test func aChangeBetweenPagesReappearsLaterWhenAscending() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let id = customer.transactions[0].transactionId
        let first = SimulatorFixture.object(await fixture.send("GET", "/inApps/v2/history/\(id)"))
        let firstIds = (first["signedTransactions"] as? [String] ?? []).map {
            SimulatorFixture.payload($0)["transactionId"] as? String ?? ""
        }
        let changed = firstIds[3]
        fixture.clock.advance(by: .seconds(10))
        #expect(
            fixture.simulator.refund(transactionId: changed, bundleId: fixture.app.bundleId, environment: .production))
        var ids = firstIds
        var revision = first["revision"] as? String ?? ""
        var revokedAgain = false
        while true {
            let body = SimulatorFixture.object(
                await fixture.send("GET", "/inApps/v2/history/\(id)?revision=\(revision)"))
            for jws in body["signedTransactions"] as? [String] ?? [] {
                let payload = SimulatorFixture.payload(jws)
                ids.append(payload["transactionId"] as? String ?? "")
                if payload["transactionId"] as? String == changed {
                    revokedAgain =
                        payload["revocationDate"] != nil && payload["revocationType"] as? String == "REFUND_FULL"
                }
            }
            revision = body["revision"] as? String ?? ""
            if body["hasMore"] as? Bool != true { break }
        }
        #expect(ids.last == changed)
        #expect(revokedAgain)
        #expect(ids.filter { $0 == changed }.count == 2)
        #expect(Set(ids).count == customer.transactions.count)
        // The last revision, kept, fetches only what changes later.
        let later = SimulatorFixture.object(await fixture.send("GET", "/inApps/v2/history/\(id)?revision=\(revision)"))
        #expect((later["signedTransactions"] as? [String])?.isEmpty == true)
        #expect(later["hasMore"] as? Bool == false)
    }

    @Test func version1LeavesOutFinishedConsumables() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let finished = customer.transactions.filter { $0.kind == .consumable && $0.isFinished }
        #expect(!finished.isEmpty)
        let v1 = await Self.allPages(fixture, customer.appTransactionId, version: "v1")
        #expect(v1.ids.count == customer.transactions.count - finished.count)
        #expect(Set(v1.ids).isDisjoint(with: finished.map(\.transactionId)))
    }

    @Test func malformedRevisionIs4000005() async {
        let fixture = SimulatorFixture()
        let id = fixture.busiestCustomer.transactions[0].transactionId
        for revision in ["abc", "12_", "x_1", "1_2_3"] {
            let body = SimulatorFixture.object(
                await fixture.send("GET", "/inApps/v2/history/\(id)?revision=\(revision)"))
            #expect(body["errorCode"] as? Int == 4_000_005)
        }
    }
}
