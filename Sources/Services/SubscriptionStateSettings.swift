import AppStoreDomain
import SubscriptionState

/// The subscription state's and its events' settings (`subscriptions.*`).
package struct SubscriptionStateSettings: Sendable, Hashable {
    /// `subscriptions.refundPolicy`: what a refunded current transaction does to access — `immediate`
    /// (default: Apple's status 5 ends it) or `untilExpiry` (access lasts until the refunded period's end).
    package var refundPolicy: SubscriptionPolicy.RefundPolicy = .immediate
    /// `subscriptions.eventRetention`: how long subscription events are kept (for WatchSubscriptionEvents with
    /// `from_beginning`, resume tokens, and sinks that were down). Default 30 days; a resume token older than
    /// this is refused (RESUME_TOKEN_EXPIRED).
    package var eventRetention: Duration = .seconds(30 * 86_400)
    /// `subscriptions.webhooks`: the teams' webhooks the events are POSTed to, signed (docs/subscription-events.md,
    /// "Webhooks to teams"). Default none.
    package var webhooks: [TeamWebhook.Settings] = []
    /// `subscriptions.redisStream`: a Redis stream every event is appended to (on the configured `redis`).
    package var redisStream: RedisStreamSink.Settings?
    /// `subscriptions.appleReadWeight`: the weight of the state's own reads of Apple (confirmations of records
    /// that may have renewed unseen, first reads of ids never seen, the timer's) when listed callers compete for an
    /// app's budget: they run as the caller `appstore-gateway/subscription-state` and get at least this weight's
    /// share, and no more while others wait. Default 1 (1–1000, as `callers[].weight`).
    package var appleReadWeight = 1
    /// `subscriptions.recordCacheSize`: how many records GetSubscription keeps decoded in memory, used again while
    /// the store says they are unchanged (each read still asks the store: a few small columns instead of two JWS
    /// and their snapshots). ~19 KB a record; default 2048 (~40 MiB at most); 0 keeps none (0–1000000).
    package var recordCacheSize = RecordCache.defaultCapacity

    package init() {}

    /// The reducer's policy for `app`: this refund policy and the app's entitlements.
    package func policy(for app: App) -> SubscriptionPolicy {
        SubscriptionPolicy(refundPolicy: refundPolicy, entitlements: app.entitlements)
    }
}
