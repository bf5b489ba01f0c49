import GatewayFoundation
import HTTPServer
import Metrics
import NotificationStore
import Observability
import Testing

@testable import Edge
@testable import Services

/// A genuine notification signed longer ago than the store's retention: once its entry is pruned its UUID
/// no longer deduplicates it, so it is answered 200 but neither stored nor streamed, and counted.
@Suite struct NotificationWebhookRetentionTests {
    @Test func aNotificationSignedBeforeTheRetentionIsAnswered200AndNotStored() async throws {
        let fixture = try NotificationWebhookTests.Fixture()
        let store = try fixture.store()
        let registry = MetricsRegistry()
        // The webhook's clock reads 31 days after the simulator signed: a replay past the 30-day retention.
        let clock = ManualClock(wall: SystemClock().wallNow() + .seconds(31 * 86_400))
        let webhook = NotificationWebhook(
            path: "/apple/notifications", verifier: fixture.verifier, pool: VerificationPool(threads: 1, queueLimit: 4),
            apps: fixture.apps, store: store, clock: clock, metrics: NotificationMetrics(registry: registry),
            retention: NotificationRetention(milliseconds: 30 * 86_400_000))
        let (uuid, jws) = try await fixture.signed()
        #expect(await webhook.receive(NotificationWebhookTests.body(jws)) == .stale(app: "example", uuid: uuid))
        let answer = await webhook.handle(
            HTTPRequest(method: "POST", target: "/apple/notifications", body: NotificationWebhookTests.body(jws)))
        #expect(answer.status == 200)
        #expect(try await store.lastPosition() == .zero)
        #expect(
            registry.render().contains(
                #"appstore_gateway_notifications_stale_total{app="example",source="webhook"} 2"#))
        // Within the retention the same notification is stored.
        clock.setWall(SystemClock().wallNow())
        #expect(await webhook.receive(NotificationWebhookTests.body(jws)) == .stored(app: "example", uuid: uuid))
    }

    @Test func staleMeansSignedBeforeTheRetentionAtNow() {
        let retention = NotificationRetention(milliseconds: 1_000)
        #expect(!retention.isStale(signedDate: 9_000, now: 10_000))
        #expect(retention.isStale(signedDate: 8_999, now: 10_000))
        #expect(retention.pruneCutoff(now: 10_000) == 9_000)
        #expect(retention.pruneCutoff(now: Int64.min) == Int64.min)
        #expect(!retention.isStale(signedDate: Int64.min, now: Int64.min))
        #expect(NotificationRetention(milliseconds: 0).milliseconds == 1)
    }
}
