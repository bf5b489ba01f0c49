import Foundation
import GatewayFoundation
import HTTPServer
import Testing

@testable import Simulator

@Suite struct NotificationHistoryTests {
    static let day: Int64 = 86_400_000
    static var now: Int64 { SimulatorFixture.referenceTime.millisecondsSince1970 }

    static func body(start: Int64 = now - 170 * day, end: Int64 = now, extra: String = "") -> String {
        "{\"startDate\":\(start),\"endDate\":\(end)\(extra)}"
    }

    /// Every notification the filtered history returns across pages (decoded payloads) and the page count.
    static func all(_ fixture: SimulatorFixture, _ body: String, environment: String = "")
        async -> (payloads: [[String: Any]], items: [[String: Any]], pages: Int)
    {
        var payloads: [[String: Any]] = []
        var items: [[String: Any]] = []
        var token: String?
        var pages = 0
        repeat {
            let query = token.map { "?paginationToken=\($0)" } ?? ""
            let response = await fixture.send(
                "POST", "\(environment)/inApps/v1/notifications/history\(query)", body: body)
            #expect(response.status == 200)
            let object = SimulatorFixture.object(response)
            let page = object["notificationHistory"] as? [[String: Any]] ?? []
            #expect(page.count <= 20)
            items += page
            payloads += page.map { SimulatorFixture.payload($0["signedPayload"] as? String ?? "") }
            token = object["paginationToken"] as? String
            pages += 1
            if object["hasMore"] as? Bool != true { break }
        } while pages < 200
        return (payloads, items, pages)
    }

    static func expected(_ fixture: SimulatorFixture, _ include: (SimulatedNotification) -> Bool) -> [String] {
        fixture.dataset.allNotifications.filter { $0.date >= now - 170 * day && $0.date <= now && include($0) }
            .map(\.notificationUUID)
    }

    @Test func pagesThroughTheWindowOnceInDateOrder() async {
        let fixture = SimulatorFixture()
        let result = await Self.all(fixture, Self.body())
        #expect(result.pages > 1)
        #expect(result.payloads.map { $0["notificationUUID"] as? String ?? "" } == Self.expected(fixture) { _ in true })
        let dates = result.payloads.map { $0["signedDate"] as? Int64 ?? 0 }
        #expect(dates == dates.sorted())
    }

    @Test func typeSubtypeTransactionAndFailureFilters() async {
        let fixture = SimulatorFixture(customers: 30)
        let renewals = await Self.all(fixture, Self.body(extra: ",\"notificationType\":\"DID_RENEW\""))
        #expect(!renewals.payloads.isEmpty)
        #expect(renewals.payloads.allSatisfy { $0["notificationType"] as? String == "DID_RENEW" })
        #expect(renewals.payloads.count == Self.expected(fixture) { $0.notificationType == "DID_RENEW" }.count)

        let initial = await Self.all(
            fixture, Self.body(extra: ",\"notificationType\":\"SUBSCRIBED\",\"notificationSubtype\":\"INITIAL_BUY\""))
        #expect(
            initial.payloads.map { $0["notificationUUID"] as? String ?? "" }
                == Self.expected(fixture) { $0.notificationType == "SUBSCRIBED" && $0.subtype == "INITIAL_BUY" })

        let customer = fixture.busiestCustomer
        let own = await Self.all(
            fixture, Self.body(extra: ",\"transactionId\":\"\(customer.transactions.last?.transactionId ?? "")\""))
        #expect(
            own.payloads.map { $0["notificationUUID"] as? String ?? "" }
                == Self.expected(fixture) { note in
                    customer.notifications.contains { $0.notificationUUID == note.notificationUUID }
                })

        let failures = await Self.all(fixture, Self.body(extra: ",\"onlyFailures\":true"))
        #expect(!failures.items.isEmpty)
        for item in failures.items {
            let results = (item["sendAttempts"] as? [[String: Any]] ?? []).map { $0["sendAttemptResult"] as? String }
            #expect(!results.isEmpty && !results.contains("SUCCESS"))
        }
        #expect(failures.items.count == Self.expected(fixture) { $0.neverDelivered }.count)
    }

    @Test func sendAttemptsFollowApplesRetrySchedule() async {
        let fixture = SimulatorFixture(customers: 30)
        let result = await Self.all(fixture, Self.body())
        var sawRetry = false
        for item in result.items {
            let attempts = item["sendAttempts"] as? [[String: Any]] ?? []
            #expect((1...6).contains(attempts.count))
            let dates = attempts.map { $0["attemptDate"] as? Int64 ?? 0 }
            let gaps = zip(dates.dropFirst(), dates).map { ($0 - $1) / 3_600_000 }
            #expect(Array([1, 12, 24, 48, 72].prefix(gaps.count)) == gaps)
            sawRetry = sawRetry || attempts.count > 1
        }
        #expect(sawRetry)
    }

    @Test func futureEndDateIsClampedAndSandboxWindowIs30Days() async {
        let fixture = SimulatorFixture()
        let clamped = await fixture.send(
            "POST", "/inApps/v1/notifications/history", body: Self.body(end: Self.now + 10 * Self.day))
        #expect(clamped.status == 200)
        let old = await fixture.send(
            "POST", "/inApps/v1/notifications/history", body: Self.body(start: Self.now - 40 * Self.day),
            headers: [("x-simulator-environment", "sandbox")])
        #expect(SimulatorFixture.object(old)["errorCode"] as? Int == 4_000_012)
        let recent = await Self.all(fixture, Self.body(start: Self.now - 29 * Self.day), environment: "/sandbox")
        #expect(!recent.payloads.isEmpty)
        // Every payload kind says sandbox: `data`, `summary` and `appData` by field, tokens by their id's prefix.
        #expect(
            recent.payloads.allSatisfy { payload in
                if let token = payload["externalPurchaseToken"] as? [String: Any] {
                    return (token["externalPurchaseId"] as? String)?.hasPrefix("SANDBOX") == true
                }
                let container = (payload["data"] ?? payload["summary"] ?? payload["appData"]) as? [String: Any]
                return container?["environment"] as? String == "Sandbox"
            })
    }

    @Test(arguments: [
        (body(start: now - 181 * day), 4_000_012), (body(start: now - day, end: now - 2 * day), 4_000_013),
        (body(start: now - day, end: now - day), 4_000_013), ("{\"endDate\":\(now)}", 4_000_015),
        ("{\"startDate\":\"x\",\"endDate\":\(now)}", 4_000_015), ("{\"startDate\":\(now - day)}", 4_000_016),
        (body(extra: ",\"notificationType\":\"RENEWED\""), 4_000_018),
        (body(extra: ",\"notificationType\":\"DID_RENEW\",\"notificationSubtype\":\"VOLUNTARY\""), 4_000_018),
        (body(extra: ",\"notificationSubtype\":\"INITIAL_BUY\""), 4_000_018),
        (body(extra: ",\"notificationType\":\"DID_RENEW\",\"transactionId\":\"2000000000000001\""), 4_000_019),
        (body(extra: ",\"transactionId\":\"abc\""), 4_000_006),
        (body(extra: ",\"transactionId\":\"9999999\""), 4_040_010),
        ("not json", 4_000_000),
    ])
    func badRequestsAnswerApplesCodes(body: String, code: Int) async {
        let fixture = SimulatorFixture()
        let response = await fixture.send("POST", "/inApps/v1/notifications/history", body: body)
        #expect(SimulatorFixture.object(response)["errorCode"] as? Int == code)
        #expect(response.status == code / 10_000)
    }

    @Test func paginationTokensAreCheckedAndExpire() async {
        let fixture = SimulatorFixture(paginationTokenLifetime: .seconds(600))
        let body = Self.body()
        let first = SimulatorFixture.object(await fixture.send("POST", "/inApps/v1/notifications/history", body: body))
        let token = first["paginationToken"] as? String ?? ""
        let next = await fixture.send("POST", "/inApps/v1/notifications/history?paginationToken=\(token)", body: body)
        #expect(next.status == 200)
        for bad in ["garbage", String(token.dropLast(2)) + "AA"] {
            let response = await fixture.send(
                "POST", "/inApps/v1/notifications/history?paginationToken=\(bad)", body: body)
            #expect(SimulatorFixture.object(response)["errorCode"] as? Int == 4_000_014)
        }
        let otherFilters = await fixture.send(
            "POST", "/inApps/v1/notifications/history?paginationToken=\(token)",
            body: Self.body(extra: ",\"onlyFailures\":true"))
        #expect(SimulatorFixture.object(otherFilters)["errorCode"] as? Int == 4_000_014)
        fixture.clock.advance(by: .seconds(601))
        let expired = await fixture.send(
            "POST", "/inApps/v1/notifications/history?paginationToken=\(token)", body: body)
        #expect(SimulatorFixture.object(expired)["errorCode"] as? Int == 4_000_017)
    }
}
