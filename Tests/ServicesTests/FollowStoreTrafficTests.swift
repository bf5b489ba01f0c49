import AppStoreClient
import AppleFixtures
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import NotificationStore
import ProtoCodec
import SignedData
import Synchronization
import Testing

@testable import Services

/// What a followed stream asks of the store: one UUID lookup per Apple history page (not one per event),
/// and each stored notification verified once for all followers.
@Suite(.serialized) struct FollowStoreTrafficTests {
    /// A signed notification of com.example.app (production, app Apple id 1234).
    private func notification(_ pki: AppStoreTestPKI, uuid: String, signedDate: Int64) throws -> String {
        let payload: [String: Any] = [
            "notificationType": "TEST", "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
            "data": ["bundleId": "com.example.app", "appAppleId": 1234, "environment": "Production"],
        ]
        return try pki.signer.sign(
            payload: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
    }

    /// Runs a followed stream until it has sent `count` events; returns their notification UUIDs.
    private func follow(_ handler: StreamNotificationsHandler, start: Int64, count: Int) async throws -> [String] {
        var request = StreamNotificationsRequest()
        request.app = "example"
        request.environment = .production
        request.startDate = ProtoTimestamp(unixMilliseconds: start)
        request.follow = true
        let plan = try handler.prepareFollow(request)
        let received = Lock<[String]>([])
        let enough = RPCStatus(.cancelled, "enough")
        do throws(RPCStatus) {
            try await handler.runFollow(plan, remaining: .seconds(10)) { event, _ throws(RPCStatus) in
                let total = received.withLock {
                    $0.append(event.notification?.notificationUuid ?? "?")
                    return $0.count
                }
                if total >= count { throw enough }
            }
        } catch {
            #expect(error.message == "enough", "the stream ended with \(error)")
        }
        return received.withLock { $0 }
    }

    @Test func aPageOfAppleEventsCostsOneStoreLookupAndStoredEntriesAreVerifiedOnce() async throws {
        // A PKI valid now: notifications are verified at their signedDate, within Apple's retention.
        let pki = try AppStoreTestPKI(referenceTime: Date())
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let start = now - 86_400_000
        // Apple's history: one page of 6; the store holds 3 of them and 2 of its own.
        let apple = try (0..<6).map {
            (uuid: "apple-\($0)", jws: try notification(pki, uuid: "apple-\($0)", signedDate: start + 1000 * Int64($0)))
        }
        let fixture = try UpstreamFixture { request, _ in
            guard request.path.contains("/notifications/history") else {
                return AppleJSON.error(4_040_001, status: 404)
            }
            return AppleJSON.response([
                "hasMore": false, "paginationToken": "",
                "notificationHistory": apple.map { ["signedPayload": $0.jws, "sendAttempts": []] },
            ])
        }
        let directory = NSTemporaryDirectory() + "follow-traffic-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CountingStore(try SQLiteNotificationStore(path: directory + "/n.db"))
        var stored = (0..<3).map { (uuid: apple[$0].uuid, jws: apple[$0].jws, signedDate: start + 1000 * Int64($0)) }
        for index in 0..<2 {
            let date = start + 500 + 1000 * Int64(index)
            stored.append(
                (uuid: "store-\(index)", jws: try notification(pki, uuid: "store-\(index)", signedDate: date), date))
        }
        for item in stored {
            _ = try await store.insert(
                NewNotification(
                    uuid: item.uuid, signedDate: item.signedDate, bundleId: "com.example.app",
                    environment: "Production", notificationType: "TEST", subtype: "", signedPayload: item.jws),
                receivedAt: now)
        }
        var handler = StreamNotificationsHandler(
            client: fixture.client, verifier: verifier,
            resumeTokenKeys: ResumeTokenKeyRing(keys: [Array(repeating: 7, count: 32)]),
            resumeTokenMaxAge: .seconds(60),
            clock: SystemClock())
        handler.live = LiveNotificationFeed(store: store, metrics: NotificationMetrics(registry: nil))

        let first = try await follow(handler, start: start, count: 8)
        #expect(Set(first) == Set(apple.map(\.uuid) + ["store-0", "store-1"]))
        #expect(first.count == 8)  // each notification once
        #expect(store.lookups == 1)  // one page of Apple events: one lookup, not six
        #expect(handler.verifiedStored.count == 5)

        // A second follower reads the same stored entries: served from the verified results, same events.
        let second = try await follow(handler, start: start, count: 8)
        #expect(Set(second) == Set(first))
        #expect(handler.verifiedStored.count == 5)
    }
}

/// A store that counts UUID lookups.
private final class CountingStore: NotificationStore, Sendable {
    private let inner: SQLiteNotificationStore
    private let counter = Atomic<Int>(0)
    init(_ inner: SQLiteNotificationStore) { self.inner = inner }

    var lookups: Int { counter.load(ordering: .relaxed) }
    var isShared: Bool { inner.isShared }
    var signal: LiveSignal { inner.signal }

    func insert(_ notification: NewNotification, receivedAt: Int64) async throws(NotificationStoreFailure)
        -> InsertOutcome
    { try await inner.insert(notification, receivedAt: receivedAt) }
    func entries(after position: StorePosition, matching filter: StoreFilter, limit: Int)
        async throws(NotificationStoreFailure) -> StorePage
    { try await inner.entries(after: position, matching: filter, limit: limit) }
    func window(matching filter: StoreFilter, through: StorePosition, after key: WindowKey?, limit: Int)
        async throws(NotificationStoreFailure) -> [StoredNotification]
    { try await inner.window(matching: filter, through: through, after: key, limit: limit) }
    func positions(ofUUIDs uuids: [String]) async throws(NotificationStoreFailure) -> [String: StorePosition] {
        counter.add(1, ordering: .relaxed)
        return try await inner.positions(ofUUIDs: uuids)
    }
    func lastPosition() async throws(NotificationStoreFailure) -> StorePosition { try await inner.lastPosition() }
    func prune(receivedBefore cutoff: Int64) async throws(NotificationStoreFailure) -> Int {
        try await inner.prune(receivedBefore: cutoff)
    }
}
