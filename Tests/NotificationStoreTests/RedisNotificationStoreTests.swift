import Configuration
import Foundation
import Redis
import TestSupport
import Testing

@testable import AppStoreClient
@testable import NotificationStore

/// The Redis store against a real redis-server (one per test, loopback, no persistence): the by-date
/// index behind catch-up windows, its pruning and its one-time backfill, batched UUID lookups, and the
/// scripts run by SHA with the source sent only when Redis lacks it.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct RedisNotificationStoreTests {
    private func store(_ redis: RedisProcess) -> RedisNotificationStore {
        RedisNotificationStore(
            url: RedisURL(host: "127.0.0.1", port: redis.port), keyPrefix: "t:", timeout: .seconds(2),
            retention: .seconds(3600), largestPayload: 64 * 1024)
    }

    /// The test's own connection, which reads whole streams at once.
    private func admin(_ redis: RedisProcess) throws -> RedisConnection {
        let connection = RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .seconds(2),
            limits: RedisReplyLimits(largestValue: 1 << 20, valueBytes: 1 << 26, elements: 1 << 20, depth: 3))
        try connection.connect()
        return connection
    }

    private func notification(_ uuid: String, signedDate: Int64, bundle: String = "com.example") -> NewNotification {
        NewNotification(
            uuid: uuid, signedDate: signedDate, bundleId: bundle, environment: "Sandbox", notificationType: "TEST",
            subtype: "", signedPayload: "payload-\(uuid)")
    }

    /// How many times Redis ran `command` (INFO commandstats).
    private func calls(_ command: String, _ connection: RedisConnection) throws -> Int {
        let text = try connection.pipeline([["INFO", "commandstats"]]).first?.text ?? ""
        return RedisProcess.infoNumber("cmdstat_\(command):calls=", in: text)
    }

    /// Every page of a window, as a follower's catch-up reads it.
    private func readWindow(
        _ store: RedisNotificationStore, _ filter: StoreFilter, through: StorePosition, limit: Int
    ) async throws -> [StoredNotification] {
        var all: [StoredNotification] = []
        var key: WindowKey?
        while true {
            let page = try await store.window(matching: filter, through: through, after: key, limit: limit)
            all += page
            guard page.count == limit, let last = page.last else { return all }
            key = last.key
        }
    }

    @Test func aWindowIsReadInSignedDateOrderPageByPageWithoutRescanningTheStream() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let store = store(redis)
        // Many entries outside the window, then the window's entries arriving out of signedDate order.
        for index in 0..<3000 {
            _ = try await store.insert(notification("old-\(index)", signedDate: 1_000 + Int64(index)), receivedAt: 1)
        }
        var dates: [String: Int64] = [:]
        for index in 0..<100 {
            let date = 1_000_000 + Int64((index * 37) % 100)
            dates["w-\(index)"] = date
            _ = try await store.insert(notification("w-\(index)", signedDate: date), receivedAt: 2)
            _ = try await store.insert(
                notification("other-\(index)", signedDate: date, bundle: "com.other"), receivedAt: 2)
        }
        let through = try await store.lastPosition()
        _ = try await store.insert(notification("late", signedDate: 1_000_050), receivedAt: 3)

        let connection = try admin(redis)
        let filter = StoreFilter(bundleId: "com.example", start: 1_000_000, end: 2_000_000)
        let all = try await readWindow(store, filter, through: through, limit: 10)
        #expect(all.map(\.notification.uuid).sorted() == dates.keys.sorted())
        #expect(all.map(\.key) == all.map(\.key).sorted())
        #expect(!all.contains { $0.notification.uuid == "late" })

        // What Redis sends for the whole window (index built) is a fraction of one read of the whole
        // stream; a scan of the stream per page would send the stream 11 times.
        let beforeStream = try sentBytes(connection)
        _ = try connection.pipeline([["XRANGE", "t:notifications", "-", "+"]])
        let stream = try sentBytes(connection) - beforeStream
        let beforeWindow = try sentBytes(connection)
        let second = try await readWindow(store, filter, through: through, limit: 10)
        let window = try sentBytes(connection) - beforeWindow
        #expect(second == all)
        #expect(window < stream / 4, "window \(window) bytes, stream \(stream) bytes")
    }

    /// Bytes Redis has sent to all clients so far (INFO stats).
    private func sentBytes(_ connection: RedisConnection) throws -> Int {
        let text = try connection.pipeline([["INFO", "stats"]]).first?.text ?? ""
        return RedisProcess.infoNumber("total_net_output_bytes:", in: text)
    }

    @Test func aStreamWrittenBeforeTheIndexIsIndexedOnceAndPrunedEntriesLeaveTheIndex() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let store = store(redis)
        for index in 0..<450 {
            _ = try await store.insert(notification("n-\(index)", signedDate: 5_000 - Int64(index)), receivedAt: 1)
        }
        // As if written by an older gateway: no index.
        let connection = try admin(redis)
        _ = try connection.pipeline([["DEL", "t:notifications:by-date", "t:notifications:by-date:complete"]])
        let fresh = self.store(redis)
        let filter = StoreFilter(bundleId: "com.example", start: 0, end: 10_000)
        let through = try await fresh.lastPosition()
        let all = try await readWindow(fresh, filter, through: through, limit: 50)
        #expect(all.count == 450)
        #expect(all.first?.notification.uuid == "n-449")
        #expect(all.map(\.key) == all.map(\.key).sorted())

        // Everything received before now is pruned from the stream and from the index.
        let removed = try await fresh.prune(receivedBefore: Int64(Date().timeIntervalSince1970 * 1000) + 60_000)
        #expect(removed == 450)
        let size = try connection.pipeline([["ZCARD", "t:notifications:by-date"]])
        #expect(size.first == .integer(0))
        #expect(try await fresh.window(matching: filter, through: through, after: nil, limit: 50).isEmpty)
    }

    @Test func uuidLookupsAreOneRoundTripPerBatch() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let store = store(redis)
        var stored: [String: StorePosition] = [:]
        for index in 0..<150 {
            if case .stored(let position) = try await store.insert(
                notification("u-\(index)", signedDate: Int64(index)), receivedAt: 1)
            {
                stored["u-\(index)"] = position
            }
        }
        let connection = try admin(redis)
        let before = try calls("mget", connection)
        let asked = (0..<150).map { "u-\($0)" } + ["missing-1", "missing-2"]
        let found = try await store.positions(ofUUIDs: asked)
        #expect(found == stored)
        #expect(try calls("mget", connection) - before == 2)
    }

    @Test func insertsRunTheScriptBySHAAndLoadItOnlyWhenRedisLacksIt() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let store = store(redis)
        let connection = try admin(redis)
        for index in 0..<5 {
            _ = try await store.insert(notification("a-\(index)", signedDate: 1), receivedAt: 1)
        }
        // The first call meets NOSCRIPT on a fresh Redis: the script is loaded once, the call sent again.
        #expect(try calls("script|load", connection) == 1)
        #expect(try calls("eval", connection) == 0)
        #expect(try calls("evalsha", connection) == 6)
        // A flushed script cache (as after a Redis restart) costs one load again, not a failure.
        _ = try connection.pipeline([["SCRIPT", "FLUSH"]])
        let outcome = try await store.insert(notification("b", signedDate: 1), receivedAt: 1)
        guard case .stored = outcome else {
            Issue.record("expected a new entry, got \(outcome)")
            return
        }
        let duplicate = try await store.insert(notification("b", signedDate: 1), receivedAt: 1)
        guard case .duplicate = duplicate else {
            Issue.record("expected a duplicate, got \(duplicate)")
            return
        }
        #expect(try calls("script|load", connection) == 2)
        #expect(try calls("eval", connection) == 0)
        #expect(try calls("evalsha", connection) == 9)
    }

    @Test func indexMembersSortLikeWindowKeys() {
        let keys = [
            WindowKey(signedDate: -5, position: StorePosition(major: 9, minor: 0)),
            WindowKey(signedDate: 0, position: StorePosition(major: 1, minor: 2)),
            WindowKey(signedDate: 0, position: StorePosition(major: 10, minor: 0)),
            WindowKey(signedDate: 7, position: StorePosition(major: UInt64.max, minor: UInt64.max)),
            WindowKey(signedDate: Int64.max, position: .zero),
        ]
        let members = keys.map(WindowIndex.member)
        #expect(members == members.sorted())
        #expect(members.map(WindowIndex.position) == keys.map(\.position))
        #expect(WindowIndex.position("garbage") == nil)
    }
}
