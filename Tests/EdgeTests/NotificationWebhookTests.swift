import AppStoreDomain
import Configuration
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import NotificationStore
import ProtoCodec
import SignedData
import Simulator
import Testing

@testable import Edge
@testable import Services

/// The webhook handler on bodies the in-process simulator signs: verification, app binding, dedup and
/// the status of each outcome, with a real SQLite store or a failing one.
@Suite struct NotificationWebhookTests {
    /// A simulator with two apps (the gateway knows the first) and a verifier trusting its PKI.
    final class Fixture: Sendable {
        let simulator: AppStoreSimulator
        let verifier: SignedDataVerifier
        let apps: [GatewayConfiguration.App]
        let foreignBundle: String
        let directory: String

        init() throws {
            directory =
                FileManager.default.temporaryDirectory
                .appendingPathComponent("webhook-tests-\(UUID().uuidString)").path
            let state = try SimulatorState.openOrCreate(directory: directory, seed: 21, customersPerApp: 2, appCount: 2)
            simulator = state.makeSimulator()
            let root = try Certificate(contentsOfFile: state.path("pki/root.pem"))
            verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [root]))
            let first = simulator.configuration.apps[0]
            apps = [
                GatewayConfiguration.App(
                    name: "example", bundleId: first.bundleId, appAppleId: first.appAppleId, issuerId: "", keyId: "",
                    privateKeyFile: "", environment: .auto)
            ]
            foreignBundle = simulator.configuration.apps[1].bundleId
        }

        /// A notification the simulator records and signs (not delivered anywhere).
        func signed(bundleId: String? = nil, environment: String = "Sandbox", type: String = "TEST") async throws
            -> (uuid: String, jws: String)
        {
            var body: [String: Any] = [
                "url": "http://127.0.0.1:9/unused", "deliver": false, "notificationType": type,
                "environment": environment,
            ]
            if let bundleId { body["bundleId"] = bundleId }
            let response = await simulator.handle(
                HTTPRequest(
                    method: "POST", target: "/simulator/notifications",
                    body: Array(try JSONSerialization.data(withJSONObject: body))))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            let first = try #require((object["notifications"] as? [[String: Any]])?.first)
            return (try #require(first["notificationUUID"] as? String), try #require(first["signedPayload"] as? String))
        }

        func webhook(store: any NotificationStore) -> NotificationWebhook {
            NotificationWebhook(
                path: "/apple/notifications", verifier: verifier, pool: VerificationPool(threads: 1, queueLimit: 4),
                apps: apps, store: store, clock: SystemClock(), metrics: NotificationMetrics(registry: nil))
        }

        func store() throws -> SQLiteNotificationStore {
            try SQLiteNotificationStore(path: directory + "/notifications-\(UUID().uuidString).db")
        }
    }

    static func body(_ jws: String) -> [UInt8] { Array("{\"signedPayload\":\"\(jws)\"}".utf8) }

    @Test func aGenuineNotificationIsStoredOnceAndItsRetryIsADuplicate() async throws {
        let fixture = try Fixture()
        let store = try fixture.store()
        let webhook = fixture.webhook(store: store)
        let (uuid, jws) = try await fixture.signed()
        #expect(await webhook.receive(Self.body(jws)) == .stored(app: "example", uuid: uuid))
        #expect(await webhook.receive(Self.body(jws)) == .duplicate(app: "example", uuid: uuid))
        let page = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: fixture.apps[0].bundleId), limit: 10)
        #expect(page.entries.map(\.notification.uuid) == [uuid])
        #expect(page.entries.first?.notification.environment == "Sandbox")
        #expect(page.entries.first?.notification.signedPayload == jws)
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", body: Self.body(jws)))
        #expect(answer.status == 200)
    }

    /// What the webhook stored is handed to the projector decoded (`VerifiedDeliveries`), for exactly the payload
    /// stored; a retry that stored nothing and a store that failed leave nothing behind.
    @Test func aStoredNotificationIsHandedToTheProjectorAndNothingElseIs() async throws {
        let fixture = try Fixture()
        let deliveries = VerifiedDeliveries()
        var webhook = fixture.webhook(store: try fixture.store())
        webhook.deliveries = deliveries
        let (uuid, jws) = try await fixture.signed(type: "DID_RENEW")
        #expect(await webhook.receive(Self.body(jws)) == .stored(app: "example", uuid: uuid))
        #expect(deliveries.count == 1)
        #expect(deliveries.take(uuid: uuid, signedPayload: jws + "x") == nil, "another payload takes nothing")
        #expect(deliveries.count == 0)

        let (second, secondJWS) = try await fixture.signed(type: "DID_RENEW")
        #expect(await webhook.receive(Self.body(secondJWS)) == .stored(app: "example", uuid: second))
        let data = try #require(deliveries.take(uuid: second, signedPayload: secondJWS))
        #expect(data.bundleId == fixture.apps[0].bundleId)
        #expect(data.environment == .sandbox)

        #expect(await webhook.receive(Self.body(secondJWS)) == .duplicate(app: "example", uuid: second))
        #expect(deliveries.count == 0, "a duplicate's offer is withdrawn")

        var failing = fixture.webhook(store: FailingStore())
        failing.deliveries = deliveries
        let (third, thirdJWS) = try await fixture.signed(type: "DID_RENEW")
        guard case .unavailable = await failing.receive(Self.body(thirdJWS)) else {
            Issue.record("a failing store must be unavailable")
            return
        }
        #expect(deliveries.take(uuid: third, signedPayload: thirdJWS) == nil)
    }

    /// An app configured for Production only: a Sandbox notification naming its bundle id is refused as another
    /// app's (the binding of the verified result to the app, without verifying it again).
    @Test func aNotificationOfAnEnvironmentTheAppRefusesIs403() async throws {
        let fixture = try Fixture()
        var apps = fixture.apps
        apps[0].environment = .production
        let webhook = NotificationWebhook(
            path: "/apple/notifications", verifier: fixture.verifier, pool: VerificationPool(threads: 1, queueLimit: 4),
            apps: apps, store: try fixture.store(), clock: SystemClock(), metrics: NotificationMetrics(registry: nil))
        let (_, jws) = try await fixture.signed(type: "DID_RENEW")
        guard case .unknownApp(let why) = await webhook.receive(Self.body(jws)) else {
            Issue.record("a Sandbox notification for a Production-only app must be refused")
            return
        }
        #expect(why.contains("environment"), "\(why)")
    }

    @Test func aNotificationOfAnUnconfiguredAppIs403() async throws {
        let fixture = try Fixture()
        let webhook = fixture.webhook(store: try fixture.store())
        let (_, jws) = try await fixture.signed(bundleId: fixture.foreignBundle)
        guard case .unknownApp = await webhook.receive(Self.body(jws)) else {
            Issue.record("a foreign app's notification must be refused as unknown")
            return
        }
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", body: Self.body(jws)))
        #expect(answer.status == 403)
    }

    @Test func forgedAndMalformedBodiesAre400() async throws {
        let fixture = try Fixture()
        let store = try fixture.store()
        let webhook = fixture.webhook(store: store)
        let (_, jws) = try await fixture.signed()
        var parts = jws.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        for body in [Self.body(parts.joined(separator: ".")), Array("{}".utf8), Array("nope".utf8), []] {
            guard case .notANotification = await webhook.receive(body) else {
                Issue.record("\(String(decoding: body.prefix(40), as: UTF8.self)) must be refused")
                continue
            }
        }
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", body: Array("{}".utf8)))
        #expect(answer.status == 400)
        #expect(try await store.lastPosition() == .zero)
    }

    @Test func anUnavailableStoreIs503SoAppleRetries() async throws {
        let fixture = try Fixture()
        let webhook = fixture.webhook(store: FailingStore())
        let (_, jws) = try await fixture.signed()
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", body: Self.body(jws)))
        #expect(answer.status == 503)
        #expect(answer.headers.contains { $0.name == "retry-after" })
    }

    @Test func otherMethodsAndPathsAreRefused() async throws {
        let fixture = try Fixture()
        let webhook = fixture.webhook(store: FailingStore())
        #expect(await webhook.handle(HTTPRequest(method: "GET", target: "/apple/notifications")).status == 405)
        let missing = await webhook.handle(HTTPRequest(method: "POST", target: "/other-path"))
        #expect(missing.status == 404)
        // The answer tells a scanner neither where the receiver is nor anything it sent.
        let text = String(decoding: missing.body, as: UTF8.self)
        #expect(!text.contains("/apple/notifications") && !text.contains("other-path"))
    }
}

/// A store whose every call fails, as a full disk or an unreachable Redis.
struct FailingStore: NotificationStore {
    let signal = LiveSignal()
    var isShared: Bool { false }
    static let failure = NotificationStoreFailure("disk I/O error")
    func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    {
        throw Self.failure
    }
    func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure)
        -> StorePage
    { throw Self.failure }
    func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    { throw Self.failure }
    func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition] {
        throw Self.failure
    }
    func lastPosition() async throws(NotificationStoreFailure) -> StorePosition { throw Self.failure }
    func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int { throw Self.failure }
}
