import GatewayFoundation
import NotificationStore
import ProtoCodec

/// The subscription events appended to a Redis stream (`subscriptions.redisStream`), for teams that consume with
/// consumer groups: the same JSON a team webhook is POSTed, with the event id as a field, every event once
/// (`RedisEventStream`), in order per subscription, with the webhooks' retries, dead letters and durable progress
/// (the sink is an `EventSink` whose transport is the stream).
package enum RedisStreamSink {
    /// `subscriptions.redisStream`.
    package struct Settings: Sendable, Hashable {
        /// `key`: the stream's key in the configured `redis` (used as given: no `redis.keyPrefix`).
        package var key: String
        /// `maxLen`: the stream is trimmed to about this many entries (`XADD … MAXLEN ~`). Default 1,000,000.
        package var maxLength = 1_000_000
        /// `maxBackoff`, `maxAge`: the retries of an append that fails (Redis unreachable), as a team webhook's;
        /// `timeout` is not used (each append is bounded by `redis.timeout`).
        package var retries = DeliveryRetries()

        package init(key: String) {
            self.key = key
        }

        /// The sink's identity (its progress and dead letters are kept under it) and its metrics label.
        package var sinkURL: String { "redis-stream:" + key }
    }

    /// `stream` as a sink's transport (also `appstore-gateway events replay`'s for this sink).
    package static func transport(_ stream: RedisEventStream) -> any DeliveryTransport { Transport(stream: stream) }

    /// Appends to `stream` as a sink's transport: the event id from the id header, the body as the `event` field.
    struct Transport: DeliveryTransport {
        let stream: RedisEventStream

        func post(url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration) async
            -> DeliveryOutcome
        {
            guard let id = headers.first(where: { $0.name == TeamWebhook.eventIDHeader })?.value else {
                return .failed("no event id")
            }
            do {
                _ = try await stream.append(eventID: id, body: body)
                return .answered(status: 200)
            } catch {
                return .failed(error.description)
            }
        }
    }
}
