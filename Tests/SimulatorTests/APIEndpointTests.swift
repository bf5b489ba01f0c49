import Foundation
import HTTPServer
import Testing

@testable import Simulator

/// The endpoints added for issue 18: routing (specific templates before general ones), bodies and errors in
/// Apple's codes, and the changes writes make to the data.
@Suite struct APIEndpointTests {
    private func errorCode(_ response: HTTPResponse) -> Int? {
        SimulatorFixture.object(response)["errorCode"] as? Int
    }

    @Test func appTransactionsAndTheMassExtensionAreNotTakenForIds() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let id = customer.transactions[0].transactionId
        let app = await fixture.send("GET", "/inApps/v1/transactions/appTransactions/\(id)")
        let info = SimulatorFixture.object(app)["signedAppTransactionInfo"] as? String ?? ""
        #expect(SimulatorFixture.payload(info)["appTransactionId"] as? String == customer.appTransactionId)
        let mass = await fixture.send(
            "POST", "/inApps/v1/subscriptions/extend/mass",
            body: #"{"extendByDays":3,"extendReasonCode":1,"requestIdentifier":"req-1","productId":"p"}"#)
        #expect(mass.status == 200 && SimulatorFixture.object(mass)["requestIdentifier"] as? String == "req-1")
        let status = await fixture.send("GET", "/inApps/v1/subscriptions/extend/mass/p/req-1")
        #expect(SimulatorFixture.object(status)["complete"] as? Bool == true)
        #expect(errorCode(await fixture.send("GET", "/inApps/v1/subscriptions/extend/mass/other/req-1")) == 4_040_009)
    }

    @Test func ordersAreFoundByTheirDerivedIds() async {
        let fixture = SimulatorFixture()
        let transaction = fixture.busiestCustomer.transactions[3]
        let found = SimulatorFixture.object(
            await fixture.send("GET", "/inApps/v1/lookup/\(SimulatedOrder.id(of: transaction))"))
        #expect(found["status"] as? Int == 0)
        let signed = (found["signedTransactions"] as? [String])?.first ?? ""
        #expect(SimulatorFixture.payload(signed)["transactionId"] as? String == transaction.transactionId)
        let unknown = await fixture.send("GET", "/inApps/v1/lookup/MTUNKNOWN00")
        #expect(SimulatorFixture.object(unknown)["status"] as? Int == 1)
    }

    @Test func refundHistoryPagesByRevision() async {
        let fixture = SimulatorFixture()
        let customer = fixture.dataset.customers.max { a, b in
            a.transactions.filter(\.isRevoked).count < b.transactions.filter(\.isRevoked).count
        }
        guard let customer, let id = customer.transactions.first?.transactionId else {
            Issue.record("no customer")
            return
        }
        var revision: String?
        var seen: [String] = []
        for _ in 0..<10 {
            let query = revision.map { "?revision=\($0)" } ?? ""
            let page = SimulatorFixture.object(await fixture.send("GET", "/inApps/v2/refund/lookup/\(id)\(query)"))
            seen += (page["signedTransactions"] as? [String] ?? []).compactMap {
                SimulatorFixture.payload($0)["transactionId"] as? String
            }
            revision = page["revision"] as? String
            if page["hasMore"] as? Bool != true { break }
        }
        #expect(!seen.isEmpty, "the generated data has refunds")
        #expect(
            seen
                == customer.transactions.filter(\.isRevoked).sorted {
                    ($0.revocationDate ?? 0, $0.transactionId) < ($1.revocationDate ?? 0, $1.transactionId)
                }.map(\.transactionId))
        #expect(errorCode(await fixture.send("GET", "/inApps/v2/refund/lookup/\(id)?revision=forged")) == 4_000_005)
    }

    @Test func writesCheckTheirBodiesInApplesOrder() async {
        let fixture = SimulatorFixture()
        let id = fixture.busiestCustomer.transactions[0].transactionId
        let path = "/inApps/v2/transactions/consumption/\(id)"
        #expect(errorCode(await fixture.send("PUT", path, body: #"{"customerConsented":false}"#)) == 4_000_035)
        #expect(errorCode(await fixture.send("PUT", path, body: "not json")) == 4_000_000)
        let body = #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#
        #expect(await fixture.send("PUT", path, body: body).status == 202)
        let extend = "/inApps/v1/subscriptions/extend/\(id)"
        #expect(errorCode(await fixture.send("PUT", extend, body: #"{"extendByDays":91}"#)) == 4_000_009)
        #expect(
            errorCode(
                await fixture.send(
                    "PUT", extend, body: #"{"extendByDays":1,"extendReasonCode":9,"requestIdentifier":"x"}"#))
                == 4_000_010)
    }

    @Test func anAppAccountTokenAndAFinishChangeTheData() async {
        let fixture = SimulatorFixture()
        let transaction = fixture.busiestCustomer.transactions.first { $0.transactionId == $0.originalTransactionId }
        guard let transaction else {
            Issue.record("no original transaction")
            return
        }
        let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        let set = await fixture.send(
            "PUT", "/inApps/v1/transactions/\(transaction.transactionId)/appAccountToken",
            body: #"{"appAccountToken":"\#(token)"}"#)
        #expect(set.status == 200)
        #expect(fixture.dataset.transaction(transaction.transactionId)?.appAccountToken == token)
        let finish = await fixture.send("POST", "/inApps/v1/transactions/\(transaction.transactionId)/finish")
        #expect(finish.status == 200 && fixture.dataset.transaction(transaction.transactionId)?.isFinished == true)
        #expect(errorCode(await fixture.send("POST", "/inApps/v1/transactions/99999999999/finish")) == 4_040_010)
    }
}
