import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer
import TestSupport
import Testing

@testable import Simulator

/// The simulator's Retention Messaging API: Apple's rules and error codes on the state, the 14 endpoints over
/// HTTP, uploads kept in the state directory, and performance tests run through the sender seam.
@Suite struct RetentionMessagingSimulatorTests {
    static let imageID = "a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
    static let bulletID = "b1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
    static let messageID = "c1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"

    static func png(width: UInt32, height: UInt32, colorType: UInt8 = 2) -> [UInt8] {
        PNGBytes.png(width: width, height: height, colorType: colorType)
    }

    private func code(_ body: () throws(AppleRejection) -> Void) -> Int64? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    private func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A state with a full-size image, a bullet-point image and an approved message using both.
    private func populated() throws -> RetentionMessagingState {
        var state = RetentionMessagingState()
        try state.uploadImage(identifier: Self.imageID, sizeQuery: nil, png: Self.png(width: 3840, height: 400))
        try state.uploadImage(
            identifier: Self.bulletID, sizeQuery: "BULLET_POINT", png: Self.png(width: 64, height: 64))
        try state.uploadMessage(
            identifier: Self.messageID,
            body: json(
                #"{"header":"Stay","body":"Please","image":{"imageIdentifier":"\#(Self.imageID)","altText":"a"},"#
                    + #""bulletPoints":[{"text":"t","imageIdentifier":"\#(Self.bulletID)","altText":"b"}]}"#))
        return state
    }

    @Test func imagesFollowApplesRules() throws {
        var state = try populated()
        let png = Self.png(width: 3840, height: 400)
        #expect(
            code { () throws(AppleRejection) in try state.uploadImage(identifier: "x", sizeQuery: nil, png: png) }
                == 4_000_000)
        let other = "d1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
        #expect(
            code { () throws(AppleRejection) in try state.uploadImage(identifier: other, sizeQuery: "HUGE", png: png) }
                == 4_000_216)
        #expect(
            code { () throws(AppleRejection) in
                try state.uploadImage(
                    identifier: other, sizeQuery: nil, png: Self.png(width: 3840, height: 400, colorType: 6))
            } == 4_000_161)
        #expect(
            code { () throws(AppleRejection) in
                try state.uploadImage(identifier: Self.imageID, sizeQuery: nil, png: png)
            } == 4_090_000)
        #expect(code { () throws(AppleRejection) in _ = try state.deleteImage(identifier: Self.imageID) } == 4_030_019)
        #expect(code { () throws(AppleRejection) in _ = try state.deleteImage(identifier: other) } == 4_040_014)
        #expect(state.imageList.encodedText.contains(#""imageSize":"BULLET_POINT""#))
        try state.deleteMessage(identifier: Self.messageID)
        #expect(try state.deleteImage(identifier: Self.imageID.uppercased()) == Self.imageID)
        #expect(!state.imageList.encodedText.contains(Self.imageID))
    }

    @Test func messagesFollowApplesRules() throws {
        var state = try populated()
        let id = "e1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
        let cases: [(String, Int64)] = [
            (#"{"header":"\#(String(repeating: "h", count: 67))","body":"b"}"#, 4_000_162),
            (#"{"header":"h","body":"\#(String(repeating: "b", count: 145))"}"#, 4_000_163),
            (#"{"header":"h","body":"b","headerPosition":"ABOVE_IMAGE"}"#, 4_000_224),
            (
                #"{"header":"h","body":"b","image":{"imageIdentifier":"\#(Self.imageID)","altText":""#
                    + String(repeating: "a", count: 151) + #""}}"#,
                4_000_175
            ),
            (
                #"{"header":"h","body":"b","bulletPoints":["#
                    + Array(repeating: #"{"text":"t","imageIdentifier":"\#(Self.bulletID)","altText":"a"}"#, count: 6)
                    .joined(separator: ",") + "]}",
                4_000_218
            ),
            (
                #"{"header":"h","body":"b","bulletPoints":[{"text":""# + String(repeating: "t", count: 67)
                    + #"","imageIdentifier":"\#(Self.bulletID)","altText":"a"}]}"#,
                4_000_219
            ),
            (#"{"header":"h","body":"b","image":{"imageIdentifier":"\#(id)","altText":"a"}}"#, 4_040_014),
            (#"{"header":"h","body":"b","image":{"imageIdentifier":"\#(Self.bulletID)","altText":"a"}}"#, 4_000_216),
            (#"{"header":"h"}"#, 4_000_000),
        ]
        for (body, expected) in cases {
            #expect(
                code { () throws(AppleRejection) in try state.uploadMessage(identifier: id, body: json(body)) }
                    == expected, "\(body)")
        }
        #expect(
            code { () throws(AppleRejection) in
                try state.uploadMessage(identifier: Self.messageID, body: json(#"{"header":"h","body":"b"}"#))
            } == 4_090_001)
        #expect(code { () throws(AppleRejection) in try state.deleteMessage(identifier: id) } == 4_040_015)
        #expect(state.messageList.encodedText.contains(#""messageState":"APPROVED""#))
    }

    @Test func defaultMessagesNeedAnApprovedMessage() throws {
        var state = try populated()
        let pending = "f1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"
        try state.uploadMessage(identifier: pending, body: json(#"{"header":"[pending] h","body":"b"}"#))
        func configure(_ locale: String, _ message: String) -> Int64? {
            code { () throws(AppleRejection) in
                try state.configureDefault(
                    productId: "com.example.monthly", locale: locale,
                    body: json(#"{"messageIdentifier":"\#(message)"}"#))
            }
        }
        #expect(configure("english", Self.messageID) == 4_000_164)
        #expect(configure("en-US", pending) == 4_030_017)
        #expect(configure("en-US", "11111111-2222-3333-4444-555555555555") == 4_040_015)
        #expect(configure("en-US", Self.messageID) == nil)
        #expect(
            try state.defaultMessage(productId: "com.example.monthly", locale: "en-US").encodedText
                == #"{"messageIdentifier":"\#(Self.messageID)"}"#)
        try state.deleteDefault(productId: "com.example.monthly", locale: "en-US")
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.defaultMessage(productId: "com.example.monthly", locale: "en-US")
            } == 4_040_020)
    }

    @Test func realtimeURLAndPerformanceTests() throws {
        var state = RetentionMessagingState()
        let body = json(#"{"originalTransactionId":"2000000123"}"#)
        #expect(code { () throws(AppleRejection) in _ = try state.realtimeURLJSON() } == 4_040_021)
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.startTest(
                    body: body, requestId: "r", bundleId: "b", environment: "Sandbox", checkTransaction: { _ in })
            } == 4_040_021)
        #expect(
            code { () throws(AppleRejection) in
                try state.configureRealtimeURL(body: json(#"{"realtimeURL":"nope"}"#), hasPassedTest: true)
            } == 4_000_215)
        #expect(
            code { () throws(AppleRejection) in
                try state.configureRealtimeURL(
                    body: json(#"{"realtimeURL":"https://example.com/rt"}"#), hasPassedTest: false)
            } == 4_030_026)
        try state.configureRealtimeURL(body: json(#"{"realtimeURL":"https://example.com/rt"}"#), hasPassedTest: true)
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.startTest(
                    body: json("{}"), requestId: "r", bundleId: "b", environment: "Sandbox", checkTransaction: { _ in })
            } == 4_000_211)
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.startTest(
                    body: body, requestId: "r", bundleId: "b", environment: "Sandbox",
                    checkTransaction: { _ throws(AppleRejection) in throw AppleRejection(4_000_187, "renewal") })
            } == 4_000_187)
        let requestId = "c4b87a1d-2e3f-4a5b-9c6d-7e8f9a0b1c2d"
        let plan = try state.startTest(
            body: body, requestId: requestId, bundleId: "b", environment: "Sandbox", checkTransaction: { _ in })
        #expect(plan.target == "https://example.com/rt" && plan.originalTransactionId == "2000000123")
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.startTest(
                    body: body, requestId: "s", bundleId: "b", environment: "Sandbox", checkTransaction: { _ in })
            } == 4_000_213)
        #expect(try state.testResult(requestId: requestId).encodedText.contains(#""result":"PENDING""#))
        #expect(code { () throws(AppleRejection) in _ = try state.testResult(requestId: "nope") } == 4_000_212)
        #expect(
            code { () throws(AppleRejection) in
                _ = try state.testResult(requestId: "11111111-2222-3333-4444-555555555555")
            }
                == 4_040_018)
        state.finishTest(
            requestId: requestId,
            attempts: Array(repeating: PerformanceTestAttempt(result: "SUCCESS", milliseconds: 40), count: 100))
        #expect(try state.testResult(requestId: requestId).encodedText.contains(#""result":"PASS""#))
        #expect(state.hasPassedTest)
        try state.deleteRealtimeURL()
        #expect(code { () throws(AppleRejection) in try state.deleteRealtimeURL() } == 4_040_021)
    }

    /// Apple's `realtimeURL` must begin with `https://` and be at most 256 characters (BadRequestRealtimeUrl); the
    /// simulator's one allowance is `http://` to this machine, so a test can reach a local endpoint.
    @Test func aRealtimeURLMustBeHTTPSOrLoopback() {
        var state = RetentionMessagingState()
        func configure(_ url: String) -> Int64? {
            code { () throws(AppleRejection) in
                try state.configureRealtimeURL(body: json(#"{"realtimeURL":"\#(url)"}"#), hasPassedTest: true)
            }
        }
        for refused in [
            "http://example.com/rt", "http://127.0.0.2/rt", "http://localhost.example.com/rt", "http://[::2]/rt",
            "ftp://example.com/rt", "https://example.com/" + String(repeating: "a", count: 237),
        ] {
            #expect(configure(refused) == 4_000_215, "\(refused)")
        }
        for accepted in [
            "https://example.com/rt", "https://example.com/" + String(repeating: "a", count: 236),
            "http://127.0.0.1:8080/rt", "http://localhost/rt", "http://[::1]:9/rt",
        ] {
            #expect(configure(accepted) == nil, "\(accepted)")
        }
    }

    /// Initiate Performance Test answers Apple's transaction-id errors for its `originalTransactionId`.
    @Test func aPerformanceTestNeedsTheOriginalTransactionIdOfAnOwnPurchase() async throws {
        let fixture = SimulatorFixture()
        let dataset = try #require(fixture.simulator.dataset(bundleId: fixture.app.bundleId, environment: .sandbox))
        let transactions = dataset.customers.flatMap(\.transactions)
        let original = try #require(
            transactions.first { $0.originalTransactionId == $0.transactionId && $0.inAppOwnershipType == "PURCHASED" })
        let renewal = try #require(transactions.first { $0.originalTransactionId != $0.transactionId })
        let shared = try #require(
            transactions.first {
                $0.originalTransactionId == $0.transactionId && $0.inAppOwnershipType == "FAMILY_SHARED"
            })
        let appTransactionId = try #require(dataset.customers.first?.appTransactionId)
        let production = try #require(
            fixture.simulator.dataset(bundleId: fixture.app.bundleId, environment: .production)?.customers.first?
                .transactions.first?.transactionId)
        let configured = await send(
            fixture, "PUT", "/sandbox/inApps/v1/messaging/realtime/url",
            body: json(#"{"realtimeURL":"https://sandbox.example/rt"}"#))
        #expect(configured.status == 200)
        for (id, expected) in [
            ("abc", 4_000_006), ("1", 4_000_006), (production, 4_000_006), (appTransactionId, 4_000_048),
            (shared.transactionId, 4_000_185), (renewal.transactionId, 4_000_187),
        ] {
            let answer = await send(
                fixture, "POST", "/sandbox/inApps/v1/messaging/performanceTest",
                body: json(#"{"originalTransactionId":"\#(id)"}"#))
            #expect(answer.status == 400 && SimulatorFixture.object(answer)["errorCode"] as? Int == expected, "\(id)")
        }
        let started = await send(
            fixture, "POST", "/sandbox/inApps/v1/messaging/performanceTest",
            body: json(#"{"originalTransactionId":"\#(original.transactionId)"}"#))
        #expect(started.status == 200 && SimulatorFixture.object(started)["requestId"] is String)
    }

    @Test func aSummaryCountsSlowAnswersAsTimedOutAndNeedsTheThreshold() {
        let plan = PerformanceTestPlan(
            requestId: "r", target: "t", bundleId: "b", environment: "Sandbox", originalTransactionId: "1",
            maxConcurrentRequests: 2, totalRequests: 20, totalDurationMilliseconds: 1000,
            responseTimeThresholdMilliseconds: 100, successRateThreshold: 90)
        var attempts = (1...18).map { PerformanceTestAttempt(result: "SUCCESS", milliseconds: Int64($0 * 5)) }
        attempts.append(PerformanceTestAttempt(result: "SUCCESS", milliseconds: 400))
        attempts.append(PerformanceTestAttempt(result: "NO_RESPONSE", milliseconds: 100))
        let summary = PerformanceTestSummary(plan: plan, attempts: attempts)
        #expect(summary.successRate == 90 && summary.passed && summary.numPending == 0)
        #expect(summary.failures == ["TIMED_OUT": 1, "NO_RESPONSE": 1])
        #expect(summary.p50 == 50 && summary.p99 == 400)
        let short = PerformanceTestSummary(plan: plan, attempts: Array(attempts.prefix(10)))
        #expect(!short.passed && short.numPending == 10)
        let failing = PerformanceTestSummary(
            plan: plan,
            attempts: Array(repeating: PerformanceTestAttempt(result: "TLS_ISSUE", milliseconds: 1), count: 20))
        #expect(!failing.passed && failing.successRate == 0 && failing.failures == ["TLS_ISSUE": 20])
    }

    // MARK: Over HTTP

    private func send(
        _ fixture: SimulatorFixture, _ method: String, _ path: String, body: [UInt8] = [], contentType: String? = nil
    ) async -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("authorization", "Bearer \(fixture.token())")]
        if let contentType { headers.append(("content-type", contentType)) }
        return await fixture.simulator.handle(HTTPRequest(method: method, target: path, headers: headers, body: body))
    }

    @Test func theEndpointsServeApplesPathsAndKeepUploadsInTheDirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("retention-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixture = SimulatorFixture(retentionDirectory: directory)
        let png = Self.png(width: 3840, height: 200)
        let upload = await send(
            fixture, "PUT", "/inApps/v1/messaging/image/\(Self.imageID)?imageSize=FULL_SIZE", body: png,
            contentType: "image/png")
        #expect(upload.status == 200)
        let duplicate = await send(fixture, "PUT", "/inApps/v1/messaging/image/\(Self.imageID)", body: png)
        #expect(duplicate.status == 409 && SimulatorFixture.object(duplicate)["errorCode"] as? Int == 4_090_000)
        let message = await send(
            fixture, "PUT", "/inApps/v1/messaging/message/\(Self.messageID)", body: json(#"{"header":"h","body":"b"}"#))
        #expect(message.status == 200)
        let preset = await send(
            fixture, "PUT", "/inApps/v1/messaging/default/com.example.monthly/en-US",
            body: json(#"{"messageIdentifier":"\#(Self.messageID)"}"#))
        #expect(preset.status == 200)
        let sandboxList = await send(fixture, "GET", "/sandbox/inApps/v1/messaging/image/list")
        #expect(
            SimulatorFixture.object(sandboxList)["imageIdentifiers"] as? [Any] == nil
                || (SimulatorFixture.object(sandboxList)["imageIdentifiers"] as? [Any])?.isEmpty == true)
        let stored = directory.appendingPathComponent("com.example.app/production/images/\(Self.imageID).png")
        #expect(try Data(contentsOf: stored) == Data(png))

        // A new simulator over the same directory serves what was uploaded.
        let restarted = SimulatorFixture(retentionDirectory: directory)
        let images = SimulatorFixture.object(await send(restarted, "GET", "/inApps/v1/messaging/image/list"))
        let items = images["imageIdentifiers"] as? [[String: Any]] ?? []
        #expect(items.map { $0["imageIdentifier"] as? String } == [Self.imageID])
        #expect(
            items.first?["imageState"] as? String == "APPROVED" && items.first?["imageSize"] as? String == "FULL_SIZE")
        let found = await send(restarted, "GET", "/inApps/v1/messaging/default/com.example.monthly/en-US")
        #expect(SimulatorFixture.object(found)["messageIdentifier"] as? String == Self.messageID)
        let gone = await send(restarted, "DELETE", "/inApps/v1/messaging/message/\(Self.messageID)")
        #expect(gone.status == 200)
        let deleted = await send(restarted, "DELETE", "/inApps/v1/messaging/image/\(Self.imageID)")
        #expect(deleted.status == 200 && !FileManager.default.fileExists(atPath: stored.path))
    }

    @Test func aPerformanceTestRunsThroughTheSenderSeam() async throws {
        let seen = Lock<[PerformanceTestPlan]>([])
        let fixture = SimulatorFixture(performanceTestSender: { plan in
            seen.withLock { $0.append(plan) }
            return Array(repeating: PerformanceTestAttempt(result: "SUCCESS", milliseconds: 30), count: 100)
        })
        let url = "https://gateway.example/realtime"
        let productionURL = "https://gateway.example/production/realtime"
        let originalTransactionId = try #require(
            fixture.simulator.dataset(bundleId: fixture.app.bundleId, environment: .sandbox)?.customers
                .flatMap(\.transactions)
                .first { $0.originalTransactionId == $0.transactionId && $0.inAppOwnershipType == "PURCHASED" }?
                .transactionId)
        let refused = await send(
            fixture, "PUT", "/inApps/v1/messaging/realtime/url", body: json(#"{"realtimeURL":"\#(productionURL)"}"#))
        #expect(SimulatorFixture.object(refused)["errorCode"] as? Int == 4_030_026)
        let configured = await send(
            fixture, "PUT", "/sandbox/inApps/v1/messaging/realtime/url", body: json(#"{"realtimeURL":"\#(url)"}"#))
        #expect(configured.status == 200)
        let started = SimulatorFixture.object(
            await send(
                fixture, "POST", "/sandbox/inApps/v1/messaging/performanceTest",
                body: json(#"{"originalTransactionId":"\#(originalTransactionId)"}"#)))
        let requestId = try #require(started["requestId"] as? String)
        #expect((started["config"] as? [String: Any])?["totalRequests"] as? Int == 100)
        var result: [String: Any] = [:]
        for _ in 0..<200 {
            result = SimulatorFixture.object(
                await send(fixture, "GET", "/sandbox/inApps/v1/messaging/performanceTest/result/\(requestId)"))
            if result["result"] as? String != "PENDING" { break }
            await Task.yield()
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(result["result"] as? String == "PASS" && result["target"] as? String == url)
        #expect(seen.withLock { $0.map(\.environment) } == ["Sandbox"])
        #expect(seen.withLock { $0.map(\.originalTransactionId) } == [originalTransactionId])
        // Production now takes a URL: its own, as Apple recommends, not the sandbox one that was tested.
        let accepted = await send(
            fixture, "PUT", "/inApps/v1/messaging/realtime/url", body: json(#"{"realtimeURL":"\#(productionURL)"}"#))
        #expect(accepted.status == 200)
    }
}
