import TestSupport
import Testing

@testable import Redis

/// A Redis that trickles its replies, one byte well within the timeout of the last: the connection gives up
/// when the command's one deadline passes, not when the reply ends.
@Suite(.serialized)
struct RedisConnectionDeadlineTests {
    /// A reply of 300 bytes at one byte per 10 ms: 3 s, where the timeout is 100 ms.
    static let reply = Array(("+" + String(repeating: "x", count: 297) + "\r\n").utf8)

    func connection(port: Int, password: String? = nil) -> RedisConnection {
        RedisConnection(
            url: RedisURL(host: "127.0.0.1", port: port, password: password), timeout: .milliseconds(100),
            limits: .administration)
    }

    @Test func aReplyTrickledByteByByteTimesOutAtTheCommandsDeadline() throws {
        let redis = try TricklingRedis(reply: Self.reply, interval: .milliseconds(10))
        defer { redis.stop() }
        let connection = connection(port: redis.port)
        try connection.connect()
        do {
            let replies = try connection.pipeline([["PING"]])
            Issue.record("a reply trickled over 3 s was accepted under a 100 ms timeout: \(replies)")
        } catch {
            #expect(error.kind == .timeout, "\(error.message)")
        }
        #expect(redis.bytesSent < Self.reply.count, "the connection waited for the whole trickle")
        #expect(!connection.isConnected)
    }

    @Test func theConnectsSetupSharesTheConnectsDeadline() throws {
        let redis = try TricklingRedis(reply: Self.reply, interval: .milliseconds(10))
        defer { redis.stop() }
        let connection = connection(port: redis.port, password: "secret")
        do {
            try connection.connect()  // AUTH, answered by the trickle
            Issue.record("a connect whose AUTH reply trickled over 3 s succeeded under a 100 ms timeout")
        } catch {
            #expect(error.kind == .connect)
            #expect(error.message.contains("timed out"), "\(error.message)")
        }
        #expect(redis.bytesSent < Self.reply.count, "the connect waited for the whole trickle")
        #expect(!connection.isConnected)
    }
}
