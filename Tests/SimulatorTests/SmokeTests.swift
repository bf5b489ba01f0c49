import Foundation
import GatewayCore
import HTTP2
import Testing
@testable import Simulator

@Suite struct SmokeTests {
    @Test func historyFirstPageAnswers() async {
        let fixture = SimulatorFixture()
        let customer = fixture.busiestCustomer
        let response = await fixture.send("GET", "/inApps/v2/history/\(customer.transactions[0].transactionId)")
        #expect(response.status == 200)
        let body = SimulatorFixture.object(response)
        #expect((body["signedTransactions"] as? [String])?.count == 20)
        #expect(body["hasMore"] as? Bool == true)
    }
}
