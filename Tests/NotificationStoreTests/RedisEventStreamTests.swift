import Foundation
import NotificationStore
import Redis
import TestSupport
import Testing

/// The Redis stream of subscription events against a real redis-server: each event once however often it is
/// appended (a sink delivers at least once), trimmed to about its length, and back after Redis returns.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct RedisEventStreamTests {
    private func admin(_ redis: RedisProcess) throws -> RedisConnection {
        let connection = RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .seconds(2),
            limits: RedisReplyLimits(largestValue: 1 << 20, valueBytes: 1 << 24, elements: 1 << 20, depth: 3))
        try connection.connect()
        return connection
    }

    private func length(_ connection: RedisConnection, _ key: String) throws -> Int64 {
        guard case .integer(let count)? = try connection.pipeline([["XLEN", key]]).first else { return -1 }
        return count
    }

    @Test func anEventAppendedTwiceIsInTheStreamOnce() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let stream = RedisEventStream(
            url: RedisURL(host: "127.0.0.1", port: redis.port), key: "events", maxLength: 1000, timeout: .seconds(2))
        let body = Array(#"{"eventId":"e-1","note":"é \" \\ ✓"}"#.utf8)
        #expect(try await stream.append(eventID: "e-1", body: body))
        #expect(try await !stream.append(eventID: "e-1", body: body))
        #expect(try await stream.append(eventID: "e-2", body: Array("{}".utf8)))
        let connection = try admin(redis)
        #expect(try length(connection, "events") == 2)
        let entries = try connection.pipeline([["XRANGE", "events", "-", "+"]]).first
        guard case .array(let items)? = entries, case .array(let first)? = items.first,
            case .array(let fields)? = first.last
        else {
            Issue.record("unexpected XRANGE reply \(String(describing: entries))")
            return
        }
        #expect(fields.map(\.text) == ["eventId", "e-1", "event", String(decoding: body, as: UTF8.self)])
    }

    @Test func theStreamIsTrimmedAndTheIDsKeptAreBounded() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let stream = RedisEventStream(
            url: RedisURL(host: "127.0.0.1", port: redis.port), key: "trimmed", maxLength: 100, timeout: .seconds(2))
        for index in 0..<1000 { _ = try await stream.append(eventID: "e-\(index)", body: Array("{}".utf8)) }
        let connection = try admin(redis)
        let length = try length(connection, "trimmed")
        #expect(length >= 100 && length < 1000)
        guard case .integer(let ids)? = try connection.pipeline([["ZCARD", "trimmed:event-ids"]]).first else {
            Issue.record("no id set")
            return
        }
        #expect(ids == 1000)
    }

    @Test func aStoppedRedisFailsTheAppendAndTheNextOneReconnects() async throws {
        let redis = try RedisProcess()
        let port = redis.port
        let stream = RedisEventStream(
            url: RedisURL(host: "127.0.0.1", port: port), key: "events", maxLength: 10, timeout: .milliseconds(500))
        #expect(try await stream.append(eventID: "a", body: Array("{}".utf8)))
        redis.stop()
        await #expect(throws: NotificationStoreFailure.self) {
            _ = try await stream.append(eventID: "b", body: Array("{}".utf8))
        }
        let again = try RedisProcess(port: port)
        defer { again.stop() }
        #expect(try await stream.append(eventID: "b", body: Array("{}".utf8)))
    }
}
