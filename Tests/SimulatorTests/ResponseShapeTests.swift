import Foundation
import GatewayFoundation
import Testing

@testable import Simulator

/// The simulator's JSON has the same keys as Apple's samples (Fixtures/, from Apple's libraries).
@Suite struct ResponseShapeTests {
    static func sample(_ name: String) -> [String: Any] {
        guard let url = Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: "json"),
            let data = try? Data(contentsOf: url),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return [:] }
        return object
    }

    static func keys(_ value: Any?) -> Set<String> { Set((value as? [String: Any])?.keys.map { $0 } ?? []) }

    @Test func historyAndInfo() async {
        let fixture = SimulatorFixture()
        let id = fixture.busiestCustomer.transactions[0].transactionId
        let history = SimulatorFixture.object(await fixture.send("GET", "/inApps/v2/history/\(id)"))
        #expect(Self.keys(history) == Self.keys(Self.sample("transactionHistoryResponse")))
        let info = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/transactions/\(id)"))
        #expect(Self.keys(info) == Self.keys(Self.sample("transactionInfoResponse")))
    }

    @Test func notificationHistory() async {
        let fixture = SimulatorFixture()
        let now = SimulatorFixture.referenceTime.millisecondsSince1970
        let body = SimulatorFixture.object(
            await fixture.send(
                "POST", "/inApps/v1/notifications/history",
                body: "{\"startDate\":\(now - 100 * 86_400_000),\"endDate\":\(now)}"))
        let sample = Self.sample("getNotificationHistoryResponse")
        #expect(Self.keys(body) == Self.keys(sample))
        let item = (body["notificationHistory"] as? [[String: Any]])?.first
        let sampleItem = (sample["notificationHistory"] as? [[String: Any]])?.first
        #expect(Self.keys(item) == Self.keys(sampleItem))
        let attempt = (item?["sendAttempts"] as? [[String: Any]])?.first
        let sampleAttempt = (sampleItem?["sendAttempts"] as? [[String: Any]])?.first
        #expect(Self.keys(attempt) == Self.keys(sampleAttempt))
    }

    @Test func subscriptionStatuses() async {
        let fixture = SimulatorFixture()
        let id = fixture.busiestCustomer.transactions[0].transactionId
        let body = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/subscriptions/\(id)"))
        let sample = Self.sample("getAllSubscriptionStatusesResponse")
        #expect(Self.keys(body) == Self.keys(sample))
        let group = (body["data"] as? [[String: Any]])?.first
        let sampleGroup = (sample["data"] as? [[String: Any]])?.first
        #expect(Self.keys(group) == Self.keys(sampleGroup))
        #expect(
            Self.keys((group?["lastTransactions"] as? [[String: Any]])?.first)
                == Self.keys((sampleGroup?["lastTransactions"] as? [[String: Any]])?.first))
    }

    @Test func testNotificationPair() async {
        let fixture = SimulatorFixture()
        let request = SimulatorFixture.object(await fixture.send("POST", "/inApps/v1/notifications/test"))
        #expect(Self.keys(request) == Self.keys(Self.sample("requestTestNotificationResponse")))
        let token = request["testNotificationToken"] as? String ?? ""
        let status = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/notifications/test/\(token)"))
        #expect(Self.keys(status) == Self.keys(Self.sample("getTestNotificationStatusResponse")))
        let payload = SimulatorFixture.payload(status["signedPayload"] as? String ?? "")
        #expect(payload["notificationType"] as? String == "TEST")
        let unknown = await fixture.send("GET", "/inApps/v1/notifications/test/\(UUID().uuidString.lowercased())")
        #expect(SimulatorFixture.object(unknown)["errorCode"] as? Int == 4_040_008)
        let malformed = await fixture.send("GET", "/inApps/v1/notifications/test/not-a-token")
        #expect(SimulatorFixture.object(malformed)["errorCode"] as? Int == 4_000_020)
        fixture.clock.advance(by: .seconds(3601))
        let expired = await fixture.send("GET", "/inApps/v1/notifications/test/\(token)")
        #expect(SimulatorFixture.object(expired)["errorCode"] as? Int == 4_040_008)
    }

    @Test func errorBodies() async {
        let fixture = SimulatorFixture()
        let notFound = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/transactions/1999999999999999"))
        #expect(Self.keys(notFound) == Self.keys(Self.sample("transactionIdNotFoundError")))
        #expect(
            notFound["errorMessage"] as? String == Self.sample("transactionIdNotFoundError")["errorMessage"] as? String)
        let invalid = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/transactions/abc"))
        #expect(
            invalid["errorMessage"] as? String == Self.sample("invalidTransactionIdError")["errorMessage"] as? String)
        let limited = SimulatorFixture(rateLimitScale: 0.001)
        _ = await limited.send("POST", "/inApps/v1/notifications/test")
        let tooMany = SimulatorFixture.object(await limited.send("POST", "/inApps/v1/notifications/test"))
        #expect(tooMany["errorCode"] as? Int == 4_290_000)
        #expect(
            tooMany["errorMessage"] as? String == Self.sample("apiTooManyRequestsException")["errorMessage"] as? String)
    }

    @Test func statusFilter() async {
        let fixture = SimulatorFixture(customers: 40)
        for customer in fixture.dataset.customers where customer.renewals.count > 0 {
            let id = customer.appTransactionId
            for status in 1...5 {
                let body = SimulatorFixture.object(
                    await fixture.send("GET", "/inApps/v1/subscriptions/\(id)?status=\(status)"))
                let returned = (body["data"] as? [[String: Any]] ?? []).flatMap {
                    ($0["lastTransactions"] as? [[String: Any]] ?? []).map { $0["status"] as? Int ?? 0 }
                }
                #expect(returned.count == customer.renewals.filter { $0.status == status }.count)
                #expect(returned.allSatisfy { $0 == status })
            }
            let both = SimulatorFixture.object(
                await fixture.send("GET", "/inApps/v1/subscriptions/\(id)?status=1&status=2&status=3&status=4&status=5")
            )
            #expect(
                (both["data"] as? [[String: Any]] ?? []).count
                    == Set(customer.renewals.map(\.subscriptionGroupIdentifier)).count)
        }
        let id = fixture.busiestCustomer.transactions[0].transactionId
        for bad in ["0", "6", "active", ""] {
            let response = await fixture.send("GET", "/inApps/v1/subscriptions/\(id)?status=\(bad)")
            #expect(SimulatorFixture.object(response)["errorCode"] as? Int == 4_000_031)
        }
    }
}
