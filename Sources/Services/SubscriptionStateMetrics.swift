import Metrics
import ProtoCodec

/// The subscription state's Prometheus series (a registry-less instance counts nothing).
package final class SubscriptionStateMetrics: Sendable {
    package let rejections: CounterFamily?
    package let applied: CounterFamily?
    package let appleReads: CounterFamily?
    package let stale: CounterFamily?
    package let events: CounterFamily?
    package let passThroughDropped: CounterFamily?
    /// `appstore_gateway_state_record_cache_total`'s series, one per outcome (empty: none).
    private let cacheServed: [CacheOutcome: Counter]

    /// Series registered in `registry` (nil: none).
    package init(registry: MetricsRegistry?) {
        guard let registry else {
            rejections = nil; applied = nil; appleReads = nil; stale = nil; events = nil; passThroughDropped = nil
            cacheServed = [:]
            return
        }
        rejections = registry.counter(
            "appstore_gateway_state_rejected_total",
            help: "Inputs the subscription state did not apply, by reason (unverified: a notification's or a "
                + "posted transaction's JWS did not verify; other_app: it names another app or environment; "
                + "no_original_transaction_id: nothing to file it under; refused: the reducer refused it).",
            labelNames: ["reason"])
        applied = registry.counter(
            "appstore_gateway_state_changes_total",
            help: "Changes of the subscription state, by app and source (notification, apple_read, app_posted).",
            labelNames: ["app", "source"])
        appleReads = registry.counter(
            "appstore_gateway_state_apple_reads_total",
            help: "Get All Subscription Statuses calls the subscription state made (an id never seen, a record "
                + "past its expiry that may have renewed unseen, RefreshSubscription), by app.",
            labelNames: ["app"])
        stale = registry.counter(
            "appstore_gateway_state_stale_answers_total",
            help: "Answers given with `stale` set: Apple's confirmation was needed and not had in time, by app.",
            labelNames: ["app"])
        events = registry.counter(
            "appstore_gateway_state_events_total",
            help: "Subscription events made (WatchSubscriptionEvents and the sinks deliver them), by app and type "
                + "(INITIAL_PURCHASE, RENEWAL, …, ENTITLEMENT_GRANTED).",
            labelNames: ["app", "type"])
        passThroughDropped = registry.counter(
            "appstore_gateway_state_pass_through_dropped_total",
            help: "Signed transactions and renewal infos a pass-through RPC verified for its caller (GetHistory, "
                + "GetTransactionInfo, GetAllSubscriptionStatuses, …) that did not reach the subscription state, by "
                + "reason (backlog: too many were already waiting to be applied; store: the store failed to apply "
                + "them).",
            labelNames: ["reason"])
        let cache = registry.counter(
            "appstore_gateway_state_record_cache_total",
            help: "GetSubscription's answers from a stored record, by how the record cache (subscriptions."
                + "recordCacheSize) served them (answer: the kept answer sent again; record: the kept record "
                + "answered anew; read: the record read from the store, nothing usable kept). Every one asked "
                + "the store.",
            labelNames: ["outcome"])
        cacheServed = Dictionary(
            uniqueKeysWithValues: CacheOutcome.allCases.map { ($0, cache.labels($0.rawValue)) })
    }

    /// How the record cache served one of GetSubscription's answers (its `outcome` label).
    package enum CacheOutcome: String, CaseIterable, Sendable {
        case keptAnswer = "answer"
        case keptRecord = "record"
        case storeRead = "read"
    }

    package func served(_ outcome: CacheOutcome) { cacheServed[outcome]?.increment() }

    package func rejected(reason: String) { rejections?.labels(reason).increment() }
    package func changed(app: String, source: String) { applied?.labels(app, source).increment() }
    package func appleRead(app: String) { appleReads?.labels(app).increment() }
    package func staleAnswer(app: String) { stale?.labels(app).increment() }
    package func passThroughDropped(reason: String, snapshots: Int) {
        guard snapshots > 0 else { return }
        passThroughDropped?.labels(reason).increment(by: Double(snapshots))
    }
    package func made(_ made: [SubscriptionEvent]) {
        guard let events else { return }
        for event in made { events.labels(event.app, Self.name(event.type)).increment() }
    }

    /// The proto name of a type without its prefix: `RENEWAL`, `ENTITLEMENT_GRANTED`.
    static func name(_ type: SubscriptionEventType) -> String {
        guard let name = SubscriptionEventBody.eventTypeNames[type] else { return String(type.rawValue) }
        return String(name.dropFirst("SUBSCRIPTION_EVENT_TYPE_".count))
    }
}
