import Cryptography
import GatewayFoundation
import Logging
import NotificationStore
import ProtoCodec

/// The two kinds of outbound sink, built from their settings: a team's webhook of subscription events, and the
/// relay of Apple's notifications.
package enum EventSinks {
    /// Entries a sink reads from its log at once at most.
    static let page = 256

    /// A team's webhook: the subscription events its settings accept, from the events' outbox, signed with
    /// `secrets`; one lane per subscription (app, environment, original transaction id). `encode` makes the body
    /// (deterministic: a dead letter keeps the bytes that were sent, and a replay sends them again).
    package static func teamWebhook(
        _ settings: TeamWebhook.Settings, secrets: [[UInt8]], events: any SubscriptionStore,
        store: any EventSinkStore, transport: any DeliveryTransport, metrics: EventSinkMetrics,
        encode: @escaping @Sendable (SubscriptionEvent) -> [UInt8], tracer: any Tracer = SilentTracer(),
        clock: any GatewayClock = SystemClock(), logger: Logger = Logger(label: "appstore-gateway.sinks")
    ) -> EventSink<SubscriptionEvent> {
        let feed = eventFeed(events, accepts: settings.accepts, encode: encode)
        return EventSink(
            endpoint: EventSink<SubscriptionEvent>.Endpoint(
                id: EventSinkID(kind: .subscriptionEvents, url: settings.url), timeout: settings.retries.timeout,
                idHeader: TeamWebhook.eventIDHeader, secrets: secrets),
            policy: policy(settings.retries), feed: feed, store: store,
            transport: transport, metrics: metrics, tracer: tracer, clock: clock, logger: logger)
    }

    /// The Redis stream: every subscription event appended to `stream` (one lane per subscription).
    package static func redisStream(
        _ settings: RedisStreamSink.Settings, stream: RedisEventStream, events: any SubscriptionStore,
        store: any EventSinkStore, metrics: EventSinkMetrics,
        encode: @escaping @Sendable (SubscriptionEvent) -> [UInt8],
        tracer: any Tracer = SilentTracer(), clock: any GatewayClock = SystemClock(),
        logger: Logger = Logger(label: "appstore-gateway.sinks")
    ) -> EventSink<SubscriptionEvent> {
        EventSink(
            endpoint: EventSink<SubscriptionEvent>.Endpoint(
                id: EventSinkID(kind: .subscriptionEvents, url: settings.sinkURL), timeout: settings.retries.timeout,
                idHeader: TeamWebhook.eventIDHeader),
            policy: policy(settings.retries),
            feed: eventFeed(events, accepts: { _ in true }, encode: encode), store: store,
            transport: RedisStreamSink.Transport(stream: stream), metrics: metrics, tracer: tracer, clock: clock,
            logger: logger)
    }

    /// The subscription events' outbox as a sink's log: the events `accepts` takes, one lane per subscription.
    static func eventFeed(
        _ events: any SubscriptionStore, accepts: @escaping @Sendable (SubscriptionEvent) -> Bool,
        encode: @escaping @Sendable (SubscriptionEvent) -> [UInt8]
    ) -> EventSink<SubscriptionEvent>.Feed {
        EventSink<SubscriptionEvent>.Feed(
            newest: { () throws(NotificationStoreFailure) in try await events.lastEventPosition() },
            read: { position, limit throws(NotificationStoreFailure) in
                let read = try await events.events(after: position, bundleId: nil, limit: limit)
                return EventSink<SubscriptionEvent>.Page(
                    entries: read.filter { accepts($0.event) }.map {
                        (position: $0.position, lane: lane(of: $0.event), item: $0.event)
                    },
                    through: read.last?.position ?? position, full: read.count >= limit)
            },
            signal: events.eventSignal, pollInterval: .seconds(5), id: \.eventId,
            occurredAt: { $0.occurredAt?.unixMilliseconds ?? 0 }, body: encode)
    }

    /// The relay to one endpoint: every notification of the log, as Apple sent it, in log order (one lane).
    package static func relay(
        _ settings: NotificationRelay.Settings, log: any NotificationStore, store: any EventSinkStore,
        transport: any DeliveryTransport, metrics: EventSinkMetrics, tracer: any Tracer = SilentTracer(),
        clock: any GatewayClock = SystemClock(), logger: Logger = Logger(label: "appstore-gateway.sinks")
    ) -> EventSink<StoredNotification> {
        let feed = EventSink<StoredNotification>.Feed(
            newest: { () throws(NotificationStoreFailure) in
                Int64(clamping: try await log.lastPosition().major)
            },
            read: { position, limit throws(NotificationStoreFailure) in
                let page = try await log.entries(after: StorePosition(major: UInt64(max(0, position))), limit: limit)
                return EventSink<StoredNotification>.Page(
                    entries: page.entries.map { (position: Int64(clamping: $0.position.major), lane: "", item: $0) },
                    through: max(position, Int64(clamping: page.through.major)), full: page.entries.count >= limit)
            },
            signal: log.signal, pollInterval: log.isShared ? .milliseconds(250) : .seconds(5),
            id: \.notification.uuid, occurredAt: \.receivedAt,
            body: { NotificationRelay.body(signedPayload: $0.notification.signedPayload) })
        return EventSink(
            endpoint: EventSink<StoredNotification>.Endpoint(
                id: EventSinkID(kind: .notifications, url: settings.url), timeout: settings.retries.timeout,
                idHeader: NotificationRelay.uuidHeader),
            policy: policy(settings.retries), feed: feed, store: store,
            transport: transport, metrics: metrics, tracer: tracer, clock: clock, logger: logger)
    }

    /// The lane of a subscription event: its subscription.
    static func lane(of event: SubscriptionEvent) -> String {
        "\(event.app)\u{1F}\(event.environment.rawValue)\u{1F}\(event.originalTransactionId)"
    }

    static func policy<Item>(_ retries: DeliveryRetries) -> DeliverySchedule<Item>.Policy {
        DeliverySchedule<Item>.Policy(
            maxBackoff: retries.maxBackoff.wholeMilliseconds, maxAge: retries.maxAge.wholeMilliseconds)
    }
}

/// How an outbound sink tries (`timeout`, `maxBackoff`, `maxAge` of `subscriptions.webhooks[i]`,
/// `notifications.forward[i]` and `subscriptions.redisStream`): one attempt's limit, the longest wait between two
/// attempts of one entry (the first retry comes within a second, then the waits double), and how long after its
/// first attempt an entry still failing is given up (a dead letter).
package struct DeliveryRetries: Sendable, Hashable {
    /// `timeout`: one attempt (connect, send, answer). Default 10s. (The Redis stream's appends are bounded by
    /// `redis.timeout` instead.)
    package var timeout: Duration = .seconds(10)
    /// `maxBackoff`: default 5m.
    package var maxBackoff: Duration = .seconds(300)
    /// `maxAge`: default 24h.
    package var maxAge: Duration = .seconds(86_400)

    package init() {}
}

extension EventSink {
    /// Delivers while this replica holds the sink's lease in `fleet` (named after the sink), so each sink delivers
    /// from one replica of a fleet at a time, not once per replica; the fleet's sinks spread over its replicas as
    /// their leases fall. A replica that loses the lease stops (recording what it settled on the way out, as at a
    /// shutdown) and the new holder resumes from the store's progress: at least once across a takeover, as across
    /// a restart. With one replica (`FleetLease.soleReplica`) this is `run()`.
    package func run(fleet: FleetLease) async {
        // The lease is named by a digest of the URL: a URL may carry a token, and the lease table is readable by
        // whoever administers the database.
        let digest = SHA256.hash(Array(endpoint.id.url.utf8)).prefix(16).map { byte in
            String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }.joined()
        await fleet.run(
            "sink \(endpoint.id.kind.rawValue) \(digest)",
            label: "sink \(endpoint.id.kind.rawValue) \(endpoint.label)"
        ) { await self.run() }
    }
}
