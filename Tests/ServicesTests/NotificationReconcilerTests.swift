import AppStoreClient
import AppleFixtures
import Configuration
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import Metrics
import NotificationStore
import Observability
import SignedData
import Testing

@testable import Services

/// The reconciler's retention: it prunes even when comparisons with Apple are off, and never backfills a
/// notification signed before the retention (it could be one already pruned, which followers would see again).
@Suite(.serialized) struct NotificationReconcilerTests {
    static let day: Int64 = 86_400_000

    /// A signed notification of com.example.app (production, app Apple id 1234).
    private func notification(_ pki: AppStoreTestPKI, uuid: String, signedDate: Int64) throws -> String {
        let payload: [String: Any] = [
            "notificationType": "TEST", "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
            "data": ["bundleId": "com.example.app", "appAppleId": 1234, "environment": "Production"],
        ]
        return try pki.signer.sign(
            payload: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
    }

    /// The service's reconciler over a fresh SQLite store (retention 30d), metrics in `registry`.
    private func reconciler(
        _ fixture: UpstreamFixture, verifier: SignedDataVerifier, registry: MetricsRegistry? = nil,
        window: Int64 = 6 * 3_600_000
    ) throws -> (NotificationReconciler, SQLiteNotificationStore) {
        var configuration = fixture.configuration
        configuration.notifications.store.reconcileWindow = .milliseconds(window)
        let directory = NSTemporaryDirectory() + "reconciler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = try SQLiteNotificationStore(path: directory + "/n.db")
        let service = AppStoreGatewayService(
            configuration: configuration, verifier: verifier, client: fixture.client, resumeTokenKeys: .random(),
            live: LiveNotificationFeed(store: store, metrics: NotificationMetrics(registry: registry)))
        return (try #require(service.reconciler), store)
    }

    private func entry(_ uuid: String, signedDate: Int64) -> NewNotification {
        NewNotification(
            uuid: uuid, signedDate: signedDate, bundleId: "com.example.app", environment: "Production",
            notificationType: "TEST", subtype: "", signedPayload: "unused")
    }

    @Test func reconcileInterval0TurnsComparisonsOffButNotPruning() {
        let off = NotificationReconciler.Schedule(reconcileInterval: nil)
        #expect(!off.reconciles)
        #expect(off.interval == .seconds(600))
        let on = NotificationReconciler.Schedule(reconcileInterval: .seconds(60))
        #expect(on.reconciles)
        #expect(on.interval == .seconds(60))
    }

    @Test func aPassWithoutComparisonsPrunesWhatIsPastTheRetentionAndAsksAppleNothing() async throws {
        let fixture = try UpstreamFixture()
        let pki = try AppStoreTestPKI(referenceTime: Date())
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        let (reconciler, store) = try reconciler(fixture, verifier: verifier)
        let now = SystemClock().wallNow().millisecondsSince1970
        _ = try await store.insert(entry("expired", signedDate: now - 32 * Self.day), receivedAt: now - 31 * Self.day)
        _ = try await store.insert(entry("kept", signedDate: now - 2 * Self.day), receivedAt: now - 29 * Self.day)
        await reconciler.pass(reconciling: false)
        let left = try await store.entries(after: .zero, matching: StoreFilter(bundleId: "com.example.app"), limit: 10)
        #expect(left.entries.map(\.notification.uuid) == ["kept"])
        #expect(fixture.fake.requests.isEmpty)
    }

    @Test func aNotificationSignedBeforeTheRetentionIsNeverBackfilled() async throws {
        let pki = try AppStoreTestPKI(referenceTime: Date())
        let now = SystemClock().wallNow().millisecondsSince1970
        let old = try notification(pki, uuid: "signed-31-days-ago", signedDate: now - 31 * Self.day)
        let fresh = try notification(pki, uuid: "signed-an-hour-ago", signedDate: now - 3_600_000)
        // Apple's answer holds both, whatever the dates asked (a history page at the window's edge).
        let fixture = try UpstreamFixture { _, _ in
            AppleJSON.response([
                "hasMore": false, "paginationToken": "",
                "notificationHistory": [old, fresh].map { ["signedPayload": $0, "sendAttempts": []] },
            ])
        }
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        let registry = MetricsRegistry()
        // A window longer than the retention (30d): still nothing older than the retention is asked for.
        let (reconciler, store) = try reconciler(fixture, verifier: verifier, registry: registry, window: 60 * Self.day)
        #expect(await reconciler.reconcileOnce() == 1)
        let stored = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example.app"), limit: 10)
        #expect(stored.entries.map(\.notification.uuid) == ["signed-an-hour-ago"])
        #expect(
            registry.render().contains(
                #"appstore_gateway_notifications_stale_total{app="example",source="backfill"} 1"#))
        // And Apple is asked for nothing older than the retention.
        let body = try #require(fixture.fake.requests.first?.body)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let start = try #require((json["startDate"] as? NSNumber)?.int64Value)
        #expect(start >= now - 30 * Self.day)
    }
}
