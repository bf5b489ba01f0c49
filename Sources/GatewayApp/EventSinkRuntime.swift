import AppStoreClient
import AppStoreDomain
import Configuration
import Dispatch
import GatewayFoundation
import Logging
import Metrics
import NotificationStore
import Redis
import Services

/// The outbound sinks (docs/subscription-events.md): a task per team webhook (`subscriptions.webhooks`) and per
/// relay endpoint (`notifications.forward`), on one HTTP client of their own (the system's CAs, answers of at most
/// 64 KiB, redirects never followed) whose callers are served on the upstream client's loop. Built at start-up
/// (the secret files are read then: a bad one stops the start), started with the webhook's projector, stopped
/// before it.
final class EventSinkRuntime {
    private let runs: [@Sendable () async -> Void]
    private let client: UpstreamHTTPClient
    private var tasks: [Task<Void, Never>] = []
    private let finished = DispatchSemaphore(value: 0)

    private let logger: Logger
    private let description: Logger.Metadata

    private init(
        runs: [@Sendable () async -> Void], client: UpstreamHTTPClient, logger: Logger, description: Logger.Metadata
    ) {
        self.runs = runs
        self.client = client
        self.logger = logger
        self.description = description
    }

    /// The sinks `configuration` asks for, nil when none. Team webhooks need the subscription state (its outbox),
    /// the relay the sinks' progress beside the log; either missing refuses the start, naming the key.
    static func make(
        _ configuration: GatewayConfiguration, feed: LiveNotificationFeed?, fleet: FleetLease,
        upstreamLoop: GatewayComposition.OwnedLoop,
        registry: MetricsRegistry, tracer: any Tracer, logger: Logger
    ) throws(GatewayStartError) -> EventSinkRuntime? {
        let webhooks = configuration.subscriptions.webhooks
        let relays = configuration.notifications.forward
        let redisStream = configuration.subscriptions.redisStream
        guard !webhooks.isEmpty || !relays.isEmpty || redisStream != nil else { return nil }
        let secrets: [[[UInt8]]]
        do {
            secrets = try TeamWebhook.secrets(configuration)
        } catch {
            throw .invalidConfiguration(error)
        }
        if !webhooks.isEmpty && (feed?.states == nil || feed?.sinks == nil) {
            throw .invalidConfiguration(
                ConfigurationError(
                    key: "subscriptions.webhooks",
                    problem: "needs the subscription state's events: notifications.webhook with the SQLite or "
                        + "PostgreSQL notification store"))
        }
        if redisStream != nil && (feed?.states == nil || feed?.sinks == nil) {
            throw .invalidConfiguration(
                ConfigurationError(
                    key: "subscriptions.redisStream",
                    problem: "needs the subscription state's events: notifications.webhook with the SQLite or "
                        + "PostgreSQL notification store"))
        }
        if !relays.isEmpty && feed?.sinks == nil {
            throw .invalidConfiguration(
                ConfigurationError(
                    key: "notifications.forward",
                    problem: "relays the webhook's notification log: it needs notifications.webhook with the SQLite "
                        + "or PostgreSQL notification store"))
        }
        let client: UpstreamHTTPClient
        do {
            client = try UpstreamHTTPClient(
                configuration: UpstreamHTTPClient.Configuration(
                    maxResponseBytes: 64 << 10, maxConnectionsPerHost: 64, userAgent: "appstore-gateway-webhooks"),
                loop: upstreamLoop.loop)
        } catch {
            throw GatewayStartError("cannot start the webhooks' HTTP client: \(error)")
        }
        let transport = UpstreamDeliveryTransport(client: client)
        let sinkLogger = Logger(label: "appstore-gateway.sinks")
        var runs: [@Sendable () async -> Void] = []
        if let feed, let store = feed.sinks {
            // One set of series for every sink of subscription events (label `sink`), registered once.
            let metrics = EventSinkMetrics.teamWebhooks(registry: registry)
            if let events = feed.states, !webhooks.isEmpty {
                for (index, webhook) in webhooks.enumerated() {
                    let sink = EventSinks.teamWebhook(
                        webhook, secrets: secrets[index], events: events, store: store, transport: transport,
                        metrics: metrics, encode: SubscriptionEventBody.json, tracer: tracer, logger: sinkLogger)
                    runs.append { await sink.run(fleet: fleet) }
                }
            }
            if let events = feed.states, let settings = redisStream, let url = configuration.redis.url {
                let stream = RedisEventStream(
                    url: url, tls: RedisTLSFiles(configuration.redis), key: settings.key, maxLength: settings.maxLength,
                    timeout: max(.seconds(1), configuration.redis.timeout))
                let sink = EventSinks.redisStream(
                    settings, stream: stream, events: events, store: store,
                    metrics: metrics, encode: SubscriptionEventBody.json,
                    tracer: tracer, logger: sinkLogger)
                runs.append { await sink.run(fleet: fleet) }
            }
            if !relays.isEmpty {
                let relayMetrics = EventSinkMetrics.relay(registry: registry)
                for relay in relays {
                    let sink = EventSinks.relay(
                        relay, log: feed.store, store: store, transport: transport, metrics: relayMetrics,
                        tracer: tracer,
                        logger: sinkLogger)
                    runs.append { await sink.run(fleet: fleet) }
                }
            }
        }
        let description: Logger.Metadata = [
            "webhooks": "\(webhooks.map { TeamWebhook.label(of: $0.url) }.joined(separator: ","))",
            "relays": "\(relays.map { TeamWebhook.label(of: $0.url) }.joined(separator: ","))",
            "redisStream": "\(redisStream?.key ?? "")",
        ]
        return EventSinkRuntime(runs: runs, client: client, logger: logger, description: description)
    }

    /// Starts every sink's task.
    func start() {
        logger.info("delivering to the outbound sinks", metadata: description)
        let finished = finished
        tasks = runs.map { run in
            Task.detached {
                await run()
                finished.signal()
            }
        }
    }

    /// Cancels every sink (attempts under way are cancelled; what was settled is already recorded, and each sink
    /// records its last settlements on the way out) and waits for them, at most `wait`.
    func stop(wait: Duration = .seconds(2)) {
        for task in tasks { task.cancel() }
        let deadline = DispatchTime.now() + .milliseconds(Int(wait.wholeMilliseconds))
        for _ in tasks where finished.wait(timeout: deadline) == .timedOut { break }
        tasks = []
        client.shutdown()
    }
}
