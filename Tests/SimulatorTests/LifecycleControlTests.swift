import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import SignedData
import Testing

@testable import Simulator

/// Lifecycles through the simulator: the control surface, signed notifications at the simulated instant, and Get
/// All Subscription Statuses answering for the same instant with the same signed payloads.
@Suite struct LifecycleControlTests {
    private func control(_ fixture: SimulatorFixture, _ method: String, _ path: String, _ body: String? = nil)
        async -> HTTPResponse
    {
        await fixture.simulator.handle(
            HTTPRequest(method: method, target: path, headers: [], body: body.map { Array($0.utf8) } ?? []))
    }

    private func errorCode(_ response: HTTPResponse) -> Int? { SimulatorFixture.object(response)["errorCode"] as? Int }

    @Test func namedLifecyclesAreListedWithTheirSteps() async {
        let fixture = SimulatorFixture(customers: 2)
        let list = SimulatorFixture.object(await control(fixture, "GET", "/simulator/lifecycles"))
        let lifecycles = list["lifecycles"] as? [[String: Any]] ?? []
        #expect(lifecycles.compactMap { $0["name"] as? String } == Lifecycle.all.map(\.name))
        let grace = lifecycles.first { $0["name"] as? String == "billing-grace-expired" }
        let steps = grace?["steps"] as? [[String: Any]] ?? []
        #expect(steps.compactMap { $0["advance"] as? String } == ["0", "expiry", "gracePeriodEnd", "billingRetryEnd"])
        #expect(list["live"] as? Int == 0 && list["maximumLive"] as? Int == 1_000)
    }

    @Test func stepsAnswerWhatTheySentAndStatusesAgreeAtTheInstant() async throws {
        let fixture = SimulatorFixture(customers: 2)
        let started = await control(
            fixture, "POST", "/simulator/lifecycles",
            #"{"lifecycle":"billing-grace-recovered","environment":"Production"}"#)
        #expect(started.status == 200)
        let id = try #require(SimulatorFixture.object(started)["originalTransactionId"] as? String)
        #expect(
            SimulatorFixture.object(started)["now"] as? Int64 == SimulatorFixture.referenceTime.millisecondsSince1970)
        var types: [String] = []
        for expected in [1, 4, 1] {
            let answer = SimulatorFixture.object(await control(fixture, "POST", "/simulator/lifecycles/\(id)/step"))
            #expect(answer["status"] as? Int == expected)
            let now = try #require(answer["now"] as? Int64)
            let sent = try #require((answer["notifications"] as? [[String: Any]])?.first)
            types.append(sent["notificationType"] as? String ?? "")
            let payload = SimulatorFixture.payload(sent["signedPayload"] as? String ?? "")
            #expect(payload["signedDate"] as? Int64 == now)
            let data = payload["data"] as? [String: Any] ?? [:]
            #expect(data["status"] as? Int == expected && data["environment"] as? String == "Production")
            let transaction = SimulatorFixture.payload(data["signedTransactionInfo"] as? String ?? "")
            #expect(transaction["signedDate"] as? Int64 == now)
            #expect(sent["deliveryStatus"] == nil)  // no webhook configured

            // Get All Subscription Statuses, as the gateway calls it, answers for the lifecycle's instant.
            let statuses = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/subscriptions/\(id)"))
            let group = (statuses["data"] as? [[String: Any]])?.first
            let last = try #require((group?["lastTransactions"] as? [[String: Any]])?.first)
            #expect(last["status"] as? Int == expected && last["originalTransactionId"] as? String == id)
            #expect(last["signedTransactionInfo"] as? String == data["signedTransactionInfo"] as? String)
            #expect(last["signedRenewalInfo"] as? String == data["signedRenewalInfo"] as? String)
            let subscriptions = answer["subscriptions"] as? [[String: Any]] ?? []
            #expect(
                subscriptions.first?["signedTransactionInfo"] as? String == last["signedTransactionInfo"] as? String)
            let filtered = SimulatorFixture.object(
                await fixture.send("GET", "/inApps/v1/subscriptions/\(id)?status=2"))
            #expect((filtered["data"] as? [Any])?.isEmpty == true)
        }
        #expect(types == ["SUBSCRIBED", "DID_FAIL_TO_RENEW", "DID_RENEW"])
        let done = await control(fixture, "POST", "/simulator/lifecycles/\(id)/step")
        #expect(done.status == 409)
        // The lifecycle exists in its environment only, as Apple's ids do.
        let sandbox = await fixture.send(
            "GET", "/inApps/v1/subscriptions/\(id)", headers: [("x-simulator-environment", "sandbox")])
        #expect(errorCode(sandbox) == 4_040_010)
        let info = SimulatorFixture.object(await fixture.send("GET", "/inApps/v1/transactions/\(id)"))
        #expect(
            SimulatorFixture.payload(info["signedTransactionInfo"] as? String ?? "")["transactionId"] as? String == id)
    }

    @Test func adHocStepsAndEndingALifecycle() async throws {
        let fixture = SimulatorFixture(customers: 2)
        let started = SimulatorFixture.object(
            await control(
                fixture, "POST", "/simulator/lifecycles",
                #"{"steps":[{"step":"buy","product":"premium.monthly","offer":"freeTrial"}],"name":"mine"}"#))
        let id = try #require(started["originalTransactionId"] as? String)
        #expect(started["lifecycle"] as? String == "mine" && started["remaining"] as? Int == 1)
        _ = await control(fixture, "POST", "/simulator/lifecycles/\(id)/step")
        let early = await control(fixture, "POST", "/simulator/lifecycles/\(id)/step", #"{"step":"renew"}"#)
        #expect(early.status == 409)
        let renewed = SimulatorFixture.object(
            await control(fixture, "POST", "/simulator/lifecycles/\(id)/step", #"{"step":"renew","advance":"expiry"}"#))
        #expect(renewed["now"] as? Int64 == SimulatorFixture.referenceTime.millisecondsSince1970 + 7 * 86_400_000)
        let summary = SimulatorFixture.object(await control(fixture, "GET", "/simulator/lifecycles/\(id)"))
        #expect(summary["performed"] as? Int == 2 && summary["status"] as? Int == 1)
        #expect(await control(fixture, "DELETE", "/simulator/lifecycles/\(id)").status == 200)
        #expect(await control(fixture, "GET", "/simulator/lifecycles/\(id)").status == 404)
        #expect(errorCode(await fixture.send("GET", "/inApps/v1/subscriptions/\(id)")) == 4_040_010)
    }

    @Test func hostileRequestsGetJSONErrors() async {
        let fixture = SimulatorFixture(customers: 2)
        let cases: [(String, String, String?, Int)] = [
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"no-such"}"#, 404),
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"renewals","bundleId":"com.nope"}"#, 404),
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"renewals","steps":[]}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"renewals","extra":1}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"renewals","environment":"Xcode"}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"lifecycle":"renewals","url":"ftp://x"}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"steps":[{"step":"buy","product":"nope"}]}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"steps":[{"step":"fly"}]}"#, 400),
            ("POST", "/simulator/lifecycles", #"{"steps":"buy"}"#, 400),
            ("POST", "/simulator/lifecycles", "[1,2", 400),
            ("POST", "/simulator/lifecycles", nil, 400),
            ("POST", "/simulator/lifecycles/123/step", nil, 404),
            ("GET", "/simulator/lifecycles/123", nil, 404),
            ("DELETE", "/simulator/lifecycles/123", nil, 404),
            ("PUT", "/simulator/lifecycles", nil, 405),
            ("GET", "/simulator/lifecycles/1/2/3", nil, 404),
        ]
        for (method, path, body, status) in cases {
            let response = await control(fixture, method, path, body)
            #expect(response.status == status, "\(method) \(path) \(body ?? "")")
            #expect(errorCode(response) != nil, "\(method) \(path)")
        }
        let huge = "{\"steps\":[" + Array(repeating: #"{"step":"renew"}"#, count: 201).joined(separator: ",") + "]}"
        #expect(await control(fixture, "POST", "/simulator/lifecycles", huge).status == 400)
    }

    @Test func liveLifecyclesAreBounded() async throws {
        let clock = ManualClock(wall: SimulatorFixture.referenceTime)
        let app = SimulatedApp(
            name: "example", bundleId: "com.example.app", appAppleId: 1_234_567_890,
            issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "ABCDEFGHIJ",
            publicKey: SimulatorFixture.publicKey(SimulatorFixture.appKey))
        var configuration = SimulatorConfiguration(
            seed: 1, customersPerApp: 1, apps: [app], clock: clock, sleep: { _ in })
        configuration.lifecycleLimits = LifecycleLimits(maximumLive: 2, maximumSteps: 3)
        let simulator = AppStoreSimulator(configuration: configuration, pki: SimulatorFixture.sharedPKI)
        let renewals = try #require(Lifecycle.named("renewals"))
        let first = try simulator.startLifecycle(renewals)
        _ = try simulator.startLifecycle(renewals)
        #expect(throws: LifecycleControlError.self) { try simulator.startLifecycle(renewals) }
        simulator.endLifecycle(first)
        let third = try simulator.startLifecycle(renewals)
        for _ in 0..<3 { _ = try await simulator.performLifecycleStep(third) }
        await #expect(throws: LifecycleControlError.self) {
            try await simulator.performLifecycleStep(third, step: LifecycleStep(.renew, after: .toExpiry))
        }
        simulator.endLifecycle(third)
        // A step whose instant leaves the signing certificate's validity is refused (as is an unknown id).
        let late = try simulator.startLifecycle(renewals, start: WallTime(millisecondsSince1970: 4_000_000_000_000))
        await #expect(throws: LifecycleControlError.self) { try await simulator.performLifecycleStep(late) }
        await #expect(throws: LifecycleControlError.self) { try await simulator.performLifecycleStep("1") }
    }

    @Test func signedRunsVerifyAsTheGatewayVerifies() throws {
        let fixture = SimulatorFixture(customers: 1)
        let root = SimulatorFixture.sharedPKI.root.certificate
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [root]))
        let requirements = try VerificationRequirements(
            bundleID: fixture.app.bundleId, appAppleID: fixture.app.appAppleId, environment: .sandbox)
        let lifecycle = try #require(Lifecycle.named("family-sharing"))
        let reports = try SignedLifecycle.run(
            lifecycle, app: fixture.app, pki: SimulatorFixture.sharedPKI,
            start: SimulatorFixture.referenceTime.millisecondsSince1970, number: 7)
        #expect(reports.map(\.notifications.count) == [1, 1, 2, 1])
        #expect(reports.map(\.status) == [1, 1, 1, 1])
        #expect(reports[3].subscriptions.map(\.status) == [1, 5])
        #expect(reports[3].subscriptions.map(\.inAppOwnershipType) == ["PURCHASED", "FAMILY_SHARED"])
        for report in reports {
            for sent in report.notifications {
                let result = verifier.verify(sent.signedPayload, requirements: requirements)
                #expect(result.isVerified, "\(result.status): \(result.message)")
                let payload = SimulatorFixture.payload(sent.signedPayload)
                #expect(payload["signedDate"] as? Int64 == report.instant)
                #expect(payload["notificationUUID"] as? String == sent.notification.notificationUUID)
                let data = payload["data"] as? [String: Any] ?? [:]
                for key in ["signedTransactionInfo", "signedRenewalInfo"] {
                    let inner = try #require(data[key] as? String)
                    #expect(verifier.verify(inner, requirements: requirements).isVerified)
                    #expect(SimulatorFixture.payload(inner)["signedDate"] as? Int64 == report.instant)
                }
            }
        }
        // Same inputs, same bytes: a reducer test can replay a run exactly.
        let again = try SignedLifecycle.run(
            lifecycle, app: fixture.app, pki: SimulatorFixture.sharedPKI,
            start: SimulatorFixture.referenceTime.millisecondsSince1970, number: 7)
        #expect(
            again.map { $0.notifications.map(\.notification) } == reports.map { $0.notifications.map(\.notification) })
    }
}
