import AppStoreDomain
import Foundation
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SubscriptionState
import Testing

@testable import Services

/// The webhook's hand-off to the projector: taken once, only for the very payload offered, bounded, and never
/// the truth (the projector verifies what it finds no hand-off for).
@Suite struct VerifiedDeliveriesTests {
    typealias T = SubscriptionStatesTests

    private func data(_ original: String) -> NotificationData {
        var data = NotificationData()
        data.bundleId = T.bundle
        data.environment = .sandbox
        let transaction = T.transaction(original, purchased: T.t0, expires: T.t0 + 30 * T.day, signed: T.t0)
        data.transaction = transaction.payload
        data.signedTransactionInfo = transaction.jws
        return data
    }

    @Test func anOfferIsTakenOnceAndOnlyForItsOwnPayload() {
        let deliveries = VerifiedDeliveries(clock: ManualClock())
        #expect(deliveries.offer(uuid: "u", signedPayload: "a.b.c", data: data("1")))
        #expect(deliveries.take(uuid: "u", signedPayload: "a.b.C") == nil)
        #expect(deliveries.count == 0, "a mismatch removes the offer too")
        deliveries.offer(uuid: "u", signedPayload: "a.b.c", data: data("1"))
        #expect(
            deliveries.take(uuid: "u", signedPayload: "a.b.c")?.signedTransactionInfo == data("1").signedTransactionInfo
        )
        #expect(deliveries.take(uuid: "u", signedPayload: "a.b.c") == nil)
        deliveries.offer(uuid: "v", signedPayload: "a.b.c", data: data("2"))
        deliveries.withdraw(uuid: "v")
        #expect(deliveries.take(uuid: "v", signedPayload: "a.b.c") == nil)
    }

    @Test func itHoldsAtMostItsCapacityAndMakesRoomOfEntriesPastTheirLifetime() {
        let clock = ManualClock()
        let deliveries = VerifiedDeliveries(clock: clock)
        for index in 0..<VerifiedDeliveries.capacity {
            #expect(deliveries.offer(uuid: "u\(index)", signedPayload: "p", data: NotificationData()))
        }
        #expect(!deliveries.offer(uuid: "late", signedPayload: "p", data: NotificationData()))
        #expect(deliveries.count == VerifiedDeliveries.capacity)
        #expect(deliveries.offer(uuid: "u0", signedPayload: "q", data: NotificationData()), "an offer again replaces")
        clock.advance(by: VerifiedDeliveries.lifetime)
        #expect(deliveries.offer(uuid: "late", signedPayload: "p", data: NotificationData()))
        #expect(deliveries.count == 1, "every entry past its lifetime made room")
    }

    /// The projector applies a log entry from its hand-off without verifying it (the payload in the log is not even
    /// a JWS here), and verifies an entry without one: that one does not verify, so it is not applied.
    @Test func theProjectorAppliesAHandOffAndVerifiesWhatHasNone() async throws {
        let harness = T()
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "unused") }
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0))
        let states = try harness.states(apple, clock: clock)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("deliveries-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try SQLiteNotificationStore(path: directory + "/log.db")
        let projector = SubscriptionProjector(states: states, log: log, retention: .seconds(86_400))
        for (uuid, original) in [("n-1", "5001"), ("n-2", "5002")] {
            let entry = NewNotification(
                uuid: uuid, signedDate: T.t0, bundleId: T.bundle, environment: "Sandbox",
                notificationType: "SUBSCRIBED", subtype: "INITIAL_BUY", signedPayload: "not.a.jws-\(original)")
            _ = try await log.insert(entry, receivedAt: T.t0)
        }
        projector.deliveries.offer(uuid: "n-1", signedPayload: "not.a.jws-5001", data: data("5001"))
        projector.deliveries.offer(uuid: "n-2", signedPayload: "another payload", data: data("5002"))
        #expect(try await projector.step())
        let key = { (original: String) in
            SubscriptionKey(bundleId: T.bundle, environment: .sandbox, originalTransactionId: original)
        }
        let record = try #require(try await states.store.record(key("5001")))
        #expect(record.transactions["5001"]?.jws == data("5001").signedTransactionInfo)
        #expect(record.source == .notification)
        #expect(try await states.store.record(key("5002")) == nil)
        #expect(projector.deliveries.count == 0)
        #expect(apple.calls.withLock { $0 } == 0)
    }
}
