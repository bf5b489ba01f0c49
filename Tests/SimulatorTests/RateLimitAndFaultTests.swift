import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer
import Testing

@testable import Simulator

@Suite struct RateLimitTests {
    @Test func productionBudgetThen429WithRetryAfterInUnixMilliseconds() async {
        let fixture = SimulatorFixture(rateLimitScale: 1)
        let id = fixture.busiestCustomer.transactions[0].transactionId
        for _ in 0..<50 {
            #expect(await fixture.send("GET", "/inApps/v1/transactions/\(id)").status == 200)
        }
        let refused = await fixture.send("GET", "/inApps/v1/transactions/\(id)")
        #expect(refused.status == 429)
        #expect(SimulatorFixture.object(refused)["errorCode"] as? Int == 4_290_000)
        let retryAfter = Int64(refused.headers.first { $0.name == "retry-after" }?.value ?? "") ?? 0
        let now = fixture.clock.wallNow().millisecondsSince1970
        #expect(retryAfter > now && retryAfter <= now + 20)
        // Other endpoints, apps and environments have their own budgets.
        #expect(await fixture.send("GET", "/inApps/v1/subscriptions/\(id)").status == 200)
        fixture.clock.advance(by: .milliseconds(retryAfter - now))
        #expect(await fixture.send("GET", "/inApps/v1/transactions/\(id)").status == 200)
    }

    @Test func sandboxGetsTenPercent() async {
        let fixture = SimulatorFixture(rateLimitScale: 1)
        var admitted = 0
        for _ in 0..<20 {
            let response = await fixture.send("GET", "/sandbox/inApps/v1/transactions/1000000000000001")
            if response.status != 429 { admitted += 1 }
        }
        #expect(admitted == 5)
    }

    /// Apple's Advanced Commerce table: 5 per second to cancel, revoke or refund, 50 to change or migrate.
    @Test func advancedCommerceWritesHaveApplesBudgets() async {
        let fixture = SimulatorFixture(rateLimitScale: 1)
        for (path, budget) in [
            ("subscription/cancel/1", 5), ("subscription/revoke/1", 5), ("transaction/requestRefund/1", 5),
            ("subscription/changePrice/1", 50), ("subscription/changeMetadata/1", 50), ("subscription/migrate/1", 50),
        ] {
            var admitted = 0
            for _ in 0..<(budget + 5) {
                let response = await fixture.send("POST", "/advancedCommerce/v1/\(path)")
                if response.status != 429 { admitted += 1 }
            }
            #expect(admitted == budget, "\(path)")
        }
    }

    @Test func testNotificationsAreOnePerSecond() async {
        let fixture = SimulatorFixture(rateLimitScale: 1)
        #expect(await fixture.send("POST", "/inApps/v1/notifications/test").status == 200)
        #expect(await fixture.send("POST", "/inApps/v1/notifications/test").status == 429)
        fixture.clock.advance(by: .seconds(1))
        #expect(await fixture.send("POST", "/inApps/v1/notifications/test").status == 200)
    }
}

@Suite struct FaultTests {
    static func fault(_ fixture: SimulatorFixture, _ header: String) async -> HTTPResponse {
        let id = fixture.busiestCustomer.transactions[0].transactionId
        return await fixture.send("GET", "/inApps/v1/transactions/\(id)", headers: [("x-simulator-fault", header)])
    }

    @Test func errorCodesUseTheirStatus() async {
        let fixture = SimulatorFixture()
        for (code, status) in [
            (5_000_001, 500), (4_040_002, 404), (4_290_000, 429), (4_000_006, 400), (5_000_000, 500),
        ] {
            let response = await Self.fault(fixture, "error=\(code)")
            #expect(response.status == status)
            #expect(SimulatorFixture.object(response)["errorCode"] as? Int == code)
        }
    }

    @Test func deliveryFaults() async {
        let fixture = SimulatorFixture()
        let reset = await Self.fault(fixture, "reset")
        #expect(reset.delivery == .resetConnection)
        let html = await Self.fault(fixture, "html502")
        #expect(html.status == 502)
        #expect(html.headers.contains { $0.name == "content-type" && $0.value == "text/html" })
        let whole = await Self.fault(fixture, "latency=0ms")
        let truncated = await Self.fault(fixture, "truncated")
        #expect(truncated.status == 200)
        #expect(truncated.body.count == whole.body.count / 2)
        #expect((try? JSONSerialization.jsonObject(with: Data(truncated.body))) == nil)
        let slow = await Self.fault(fixture, "slow=5x100ms; truncated")
        #expect(slow.delivery == .slowBody(chunks: 5, interval: .milliseconds(100)))
    }

    @Test func latencySleepsThroughTheInjectedSleeper() async {
        let slept = SleepLog()
        let clock = ManualClock(wall: SimulatorFixture.referenceTime)
        let app = SimulatorFixture().app
        let simulator = AppStoreSimulator(
            configuration: SimulatorConfiguration(
                seed: 1, customersPerApp: 2, apps: [app], clock: clock, sleep: { await slept.record($0) }),
            pki: SimulatorFixture.sharedPKI)
        _ = await simulator.handle(HTTPRequest(method: "GET", target: "/x", headers: []))
        _ = await simulator.handle(
            HTTPRequest(
                method: "GET", target: "/inApps/v1/transactions/1",
                headers: [("x-simulator-fault", "latency=250ms,latency=2s")]))
        #expect(await slept.durations == [.milliseconds(250), .seconds(2)])
    }

    @Test(arguments: ["", "explode", "error=12", "error=abc", "latency=5", "slow=5", "slow=0x10ms", "reset=1"])
    func malformedHeaderIsAPlain400(header: String) async {
        let fixture = SimulatorFixture()
        let response = await Self.fault(fixture, header)
        #expect(response.status == 400)
        #expect(SimulatorFixture.object(response)["errorCode"] == nil)
    }

    @Test func configuredRulesEveryNthAndProbability() async {
        let fixture = SimulatorFixture(faults: [
            FaultRule(endpoint: .getTransactionInfo, trigger: .everyNth(3), faults: [.appleError(code: 5_000_001)]),
            FaultRule(endpoint: .getAllSubscriptionStatuses, trigger: .probability(1), faults: [.htmlBadGateway]),
            FaultRule(endpoint: .getTransactionHistory, trigger: .probability(0), faults: [.resetConnection]),
        ])
        let id = fixture.busiestCustomer.transactions[0].transactionId
        var statuses: [Int] = []
        for _ in 0..<6 { statuses.append(await fixture.send("GET", "/inApps/v1/transactions/\(id)").status) }
        #expect(statuses == [200, 200, 500, 200, 200, 500])
        #expect(await fixture.send("GET", "/inApps/v1/subscriptions/\(id)").status == 502)
        #expect(await fixture.send("GET", "/inApps/v2/history/\(id)").delivery == .normal)
    }
}

actor SleepLog {
    private(set) var durations: [Duration] = []
    func record(_ duration: Duration) { durations.append(duration) }
}
