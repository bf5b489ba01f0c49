import Configuration
import Foundation
import Redis
import TestSupport
import Testing

@testable import AppStoreClient
@testable import NotificationStore

/// The Redis notification store over `rediss://` with an ACL user, against a real TLS-only redis-server:
/// notifications larger than 64 KiB (up to `notifications.webhook.maxBodyBytes`) are stored and read back by
/// every read path; a larger one is refused before it is written, so nothing stored is ever unreadable; and
/// the store's largest honest page fits the bounds its replies are read with.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct RedisStoreLargeNotificationTests {
    static let acl = ["--user", "default", "off", "--user", "webhook", "on", ">s3cret:@", "~*", "&*", "+@all"]
    static let largestPayload = 256 * 1024

    private func store(_ redis: RedisProcess, _ tls: RedisTLSFixture) throws -> RedisNotificationStore {
        RedisNotificationStore(
            url: try #require(RedisURL(parsing: "rediss://webhook:s3cret%3A%40@localhost:\(redis.port)/1")),
            tls: RedisTLSFiles(caFile: tls.caFile), keyPrefix: "t:", timeout: .seconds(2),
            retention: .seconds(3600), largestPayload: Self.largestPayload)
    }

    private func notification(_ uuid: String, payloadBytes: Int, signedDate: Int64 = 1_000) -> NewNotification {
        // A JWS-like payload of the given size whose bytes vary, so a truncated or shifted read cannot pass.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".utf8)
        let payload = String(decoding: (0..<payloadBytes).map { alphabet[$0 % alphabet.count] }, as: UTF8.self)
        return NewNotification(
            uuid: uuid, signedDate: signedDate, bundleId: "com.example", environment: "Sandbox",
            notificationType: "TEST", subtype: "", signedPayload: payload)
    }

    @Test func aNotificationLargerThan64KiBRoundTripsOverTLSWithAnACLUser() async throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let store = try store(redis, tls)
        let large = notification("large", payloadBytes: Self.largestPayload)
        let small = notification("small", payloadBytes: 100, signedDate: 2_000)
        guard case .stored(let position) = try await store.insert(large, receivedAt: 5) else {
            Issue.record("the large notification was not stored")
            return
        }
        _ = try await store.insert(small, receivedAt: 6)
        // The stream scan, the by-date window, the UUID lookup and the last position all read it back whole.
        let page = try await store.entries(after: .zero, matching: StoreFilter(bundleId: "com.example"), limit: 10)
        #expect(page.entries.map(\.notification) == [large, small])
        let through = try await store.lastPosition()
        let window = try await store.window(
            matching: StoreFilter(bundleId: "com.example", start: 0, end: 10_000), through: through, after: nil,
            limit: 10)
        #expect(window.map(\.notification) == [large, small])
        #expect(try await store.positions(ofUUIDs: ["large"]) == ["large": position])
        // Inserted again: a duplicate, as any replica would find it.
        guard case .duplicate(position) = try await store.insert(large, receivedAt: 7) else {
            Issue.record("the second insert was not a duplicate of the first")
            return
        }
    }

    @Test func aNotificationLargerThanTheStoreReadsIsRefusedBeforeItIsWritten() async throws {
        let tls = try RedisTLSFixture()
        let redis = try RedisProcess(tls: tls, arguments: Self.acl)
        defer { redis.stop() }
        let store = try store(redis, tls)
        do {
            _ = try await store.insert(notification("huge", payloadBytes: Self.largestPayload + 1), receivedAt: 1)
            Issue.record("a notification larger than the store reads back was stored")
        } catch {
            #expect(error.message.contains("notifications.webhook.maxBodyBytes"))
        }
        #expect(try await store.lastPosition() == .zero)
    }

    @Test func theLargestHonestPageFitsTheStoresReplyBounds() throws {
        // An XRANGE page of `scanBatch` entries, each as large as a stored entry may be.
        let largest = 4_096
        let reader = try RedisReplyReader(limits: RedisNotificationStore.replyLimits(largestPayload: largest))
        func bulk(_ text: String) -> String { "$\(text.utf8.count)\r\n\(text)\r\n" }
        let payload = String(repeating: "p", count: largest)
        let decoded = String(repeating: "d", count: largest / 5)
        var page = "*\(RedisNotificationStore.scanBatch)\r\n"
        for index in 0..<RedisNotificationStore.scanBatch {
            page += "*2\r\n" + bulk("1700000000000-\(index)") + "*16\r\n"
            for (name, value) in [
                ("uuid", decoded), ("signedDate", "-9223372036854775808"), ("receivedAt", "9223372036854775807"),
                ("bundleId", decoded), ("environment", decoded), ("type", decoded), ("subtype", decoded),
                ("payload", payload),
            ] {
                page += bulk(name) + bulk(value)
            }
        }
        try Array(page.utf8).withUnsafeBytes { raw in
            try Result { () throws(RedisConnectionFailure) in try reader.feed(raw) }.get()
        }
        guard case .array(let entries)? = try reader.next() else {
            Issue.record("the page was not read")
            return
        }
        #expect(entries.count == RedisNotificationStore.scanBatch)
        #expect(entries.allSatisfy { RedisNotificationStore.entry($0)?.notification.signedPayload == payload })
    }
}
