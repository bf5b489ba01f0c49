import AppStoreClient
import AppStoreDomain
import Configuration
import GatewayFoundation
import Metrics
import NotificationStore
import Redis
import Services

/// `appstore-gateway events replay`: sends a sink's dead letters again, each with the exact body it was given up
/// with, freshly signed, and removes each one the endpoint acknowledges (2xx). Runs against the notification
/// store while gateways may be serving it (SQLite in WAL mode, or PostgreSQL: both write in short transactions).
package enum DeadLetterReplay {
    /// What a replay did.
    package struct Report: Sendable, Hashable {
        /// Dead letters sent and acknowledged (removed).
        package var delivered = 0
        /// Dead letters sent and not acknowledged (kept), and why the last one failed.
        package var failed = 0
        package var lastProblem: String?
    }

    /// Replays the dead letters of the sink whose URL is `url` (a `subscriptions.webhooks` entry, or a
    /// `notifications.forward` one) that died at or after `deadSince` (UNIX ms). Throws a `GatewayStartError`
    /// naming what is wrong when the sink or its store cannot be found.
    package static func run(_ configuration: GatewayConfiguration, url: String, deadSince: Int64)
        async throws(GatewayStartError) -> Report
    {
        let endpoint: EventSink<Int>.Endpoint
        var transportOverride: (any DeliveryTransport)?
        if let stream = configuration.subscriptions.redisStream, matches(stream.sinkURL, url) {
            guard let redisURL = configuration.redis.url else {
                throw .invalidConfiguration(
                    ConfigurationError(key: "subscriptions.redisStream", problem: "appends to redis: set redis.url"))
            }
            endpoint = EventSink<Int>.Endpoint(
                id: EventSinkID(kind: .subscriptionEvents, url: stream.sinkURL), timeout: stream.retries.timeout,
                idHeader: TeamWebhook.eventIDHeader)
            transportOverride = RedisStreamSink.transport(
                RedisEventStream(
                    url: redisURL, tls: RedisTLSFiles(configuration.redis), key: stream.key,
                    maxLength: stream.maxLength, timeout: max(.seconds(1), configuration.redis.timeout)))
        } else if let index = configuration.subscriptions.webhooks.firstIndex(where: { matches($0.url, url) }) {
            let webhook = configuration.subscriptions.webhooks[index]
            let secrets: [[UInt8]]
            do {
                secrets = try TeamWebhook.loadSecrets(
                    path: webhook.secretFile, key: "subscriptions.webhooks[\(index)].secretFile",
                    allowReadableFile: configuration.apple.allowReadableKeyFiles)
            } catch {
                throw .invalidConfiguration(error)
            }
            endpoint = EventSink<Int>.Endpoint(
                id: EventSinkID(kind: .subscriptionEvents, url: webhook.url), timeout: webhook.retries.timeout,
                idHeader: TeamWebhook.eventIDHeader, secrets: secrets)
        } else if let relay = configuration.notifications.forward.first(where: { matches($0.url, url) }) {
            endpoint = EventSink<Int>.Endpoint(
                id: EventSinkID(kind: .notifications, url: relay.url), timeout: relay.retries.timeout,
                idHeader: NotificationRelay.uuidHeader)
        } else {
            throw GatewayStartError(
                "no subscriptions.webhooks, notifications.forward or subscriptions.redisStream (redis-stream:<key>) "
                    + "entry has the URL \(TeamWebhook.label(of: url))")
        }
        let backend = try StoreBackend.open(configuration, registry: MetricsRegistry())
        defer { backend.close() }
        guard let sinks = backend.sinks else {
            throw GatewayStartError(
                "dead letters are kept in the SQLite or PostgreSQL store (notifications.store.sqlite or .postgres)")
        }
        let loop = try GatewayComposition.OwnedLoop(threadName: "upstream-curl")
        loop.start()
        defer { loop.stop() }
        let client: UpstreamHTTPClient
        do {
            client = try UpstreamHTTPClient(
                configuration: UpstreamHTTPClient.Configuration(
                    maxResponseBytes: 64 << 10, userAgent: "appstore-gateway-webhooks"),
                loop: loop.loop)
        } catch {
            throw GatewayStartError("cannot start the HTTP client: \(error)")
        }
        defer { client.shutdown() }
        let transport = transportOverride ?? UpstreamDeliveryTransport(client: client)
        let clock = SystemClock()
        var report = Report()
        var after: Int64 = 0
        while true {
            let letters: [EventDeadLetter]
            do {
                letters = try await sinks.deadLetters(endpoint.id, deadSince: deadSince, after: after, limit: 100)
            } catch {
                throw GatewayStartError("cannot read the dead letters: \(error)")
            }
            guard let last = letters.last else { break }
            after = last.position
            for letter in letters {
                let headers = endpoint.headers(
                    id: letter.eventId, body: letter.body,
                    unixSeconds: clock.wallNow().millisecondsSince1970.floorDivided(by: 1000))
                let outcome = await transport.post(
                    url: endpoint.id.url, headers: headers, body: letter.body, timeout: endpoint.timeout)
                if case .answered(let status) = outcome, (200..<300).contains(status) {
                    do {
                        _ = try await sinks.removeDeadLetter(endpoint.id, position: letter.position)
                    } catch {
                        throw GatewayStartError("delivered, but cannot remove the dead letter: \(error)")
                    }
                    report.delivered += 1
                } else {
                    report.failed += 1
                    report.lastProblem = outcome.problem
                }
            }
        }
        return report
    }

    /// Whether a configured URL is the one asked for: exactly, or as metrics label it (without user information,
    /// query or fragment).
    private static func matches(_ configured: String, _ asked: String) -> Bool {
        configured == asked || TeamWebhook.label(of: configured) == asked
    }
}
