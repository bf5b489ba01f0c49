import Dispatch
import GatewayFoundation
import Redis

/// A Redis stream the subscription events are appended to (`subscriptions.redisStream`), for teams that consume
/// with consumer groups: `XADD <key> MAXLEN ~ <maxLen> * eventId <id> event <JSON>`, on the configured `redis`
/// (TLS and ACL as the rate budget uses them).
///
/// **Each event once.** A sink delivers at least once (after a crash, what was appended but not yet recorded as
/// delivered is sent again), so the append is a script that also keeps the ids of the latest `recentIDs` events
/// appended (a sorted set beside the stream) and appends nothing for an id it holds: a resent event is answered
/// as delivered and not appended twice. A sink resends at most its window of unsettled events, far fewer than
/// `recentIDs`.
///
/// The connection is confined to one serial queue of its own (each append one round trip, never on an event
/// loop); a failure closes it and the next append reconnects.
package final class RedisEventStream: Sendable {
    /// How many of the latest event ids are kept to refuse a second append.
    package static let recentIDs = 100_000

    /// The stream's key.
    package let key: String
    private let idsKey: String
    private let counterKey: String
    private let maxLength: Int
    private let connection: Confined
    private let queue = DispatchQueue(label: "appstore-gateway.redis-event-stream")

    /// A stream at `key` in the Redis at `url` (TLS with `tls` for `rediss://`), trimmed to about `maxLength`
    /// entries; each append bounded by `timeout`. The script's replies are one integer, read within small limits.
    package init(
        url: RedisURL, tls: RedisTLSFiles = RedisTLSFiles(), key: String, maxLength: Int, timeout: Duration
    ) {
        self.key = key
        idsKey = key + ":event-ids"
        counterKey = key + ":event-ids:counter"
        self.maxLength = max(1, maxLength)
        connection = Confined(
            RedisConnection(
                url: url, timeout: timeout,
                limits: RedisReplyLimits(largestValue: 1024, valueBytes: 4096, elements: 16, depth: 2), tls: tls))
    }

    /// Appends XADD's script: KEYS = stream, ids, counter; ARGV = event id, body, max length, ids kept.
    static let append = RedisScript(
        """
        if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
        redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'eventId', ARGV[1], 'event', ARGV[2])
        redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[1])
        local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
        if extra > 0 then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, extra - 1) end
        return 1
        """)

    /// Appends one event's JSON; true when it was appended, false when the stream already had it.
    package func append(eventID: String, body: [UInt8]) async throws(NotificationStoreFailure) -> Bool {
        let command = Self.append.call([
            "3", key, idsKey, counterKey, eventID, String(decoding: body, as: UTF8.self), String(maxLength),
            String(Self.recentIDs),
        ])
        let connection = self.connection
        let result: Result<Bool, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Self.run(command, on: connection.value)) }
        }
        return try result.get()
    }

    private static func run(_ command: [String], on connection: RedisConnection) -> Result<
        Bool, NotificationStoreFailure
    > {
        do throws(RedisConnectionFailure) {
            if !connection.isConnected { try connection.connect() }
            let replies = try connection.pipeline([command], loading: append)
            switch replies.first {
            case .integer(let added)?: return .success(added == 1)
            case .error(let message)?:
                return .failure(NotificationStoreFailure("Redis event stream: \(message)"))
            default:
                connection.close()
                return .failure(NotificationStoreFailure("Redis event stream: an unexpected reply"))
            }
        } catch {
            return .failure(NotificationStoreFailure("Redis event stream: \(error.message)"))
        }
    }

    /// The connection, touched only on `queue`.
    private struct Confined: @unchecked Sendable {
        let value: RedisConnection
        init(_ value: RedisConnection) { self.value = value }
    }
}
