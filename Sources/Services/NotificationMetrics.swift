import Metrics

/// The webhook's and the followers' Prometheus series (a registry-less instance counts nothing).
package final class NotificationMetrics: Sendable {
    package let received: Counter?
    package let verified: Counter?
    package let rejected: CounterFamily?
    package let stored: CounterFamily?
    package let duplicates: CounterFamily?
    package let backfilled: CounterFamily?
    package let stale: CounterFamily?
    package let followers: Gauge?
    package let lag: Histogram?

    /// Series registered in `registry` (nil: none).
    package init(registry: MetricsRegistry?) {
        guard let registry else {
            received = nil; verified = nil; rejected = nil; stored = nil; duplicates = nil; backfilled = nil
            stale = nil; followers = nil; lag = nil
            return
        }
        received = registry.counter(
            "appstore_gateway_webhook_received_total", help: "Requests to the notification webhook's path."
        ).labels()
        verified = registry.counter(
            "appstore_gateway_webhook_verified_total",
            help: "Webhook notifications whose JWS verified and bound to an app."
        )
        .labels()
        rejected = registry.counter(
            "appstore_gateway_webhook_rejected_total",
            help: "Webhook requests refused, by reason (not_a_notification, verification, unknown_app, "
                + "store_unavailable, busy, method, path).",
            labelNames: ["reason"])
        stored = registry.counter(
            "appstore_gateway_notifications_stored_total", help: "Notifications newly stored, by app and source.",
            labelNames: ["app", "source"])
        duplicates = registry.counter(
            "appstore_gateway_notifications_duplicates_total",
            help: "Deliveries of a notificationUUID already stored (Apple's retries), by app.", labelNames: ["app"])
        backfilled = registry.counter(
            "appstore_gateway_notifications_backfilled_total",
            help: "Notifications the reconciler found in Apple's history but not in the store, by app.",
            labelNames: ["app"])
        stale = registry.counter(
            "appstore_gateway_notifications_stale_total",
            help: "Genuine notifications signed longer ago than notifications.store.retention (a replay, or a "
                + "delivery too late to keep), neither stored nor streamed (the webhook answers 200), by app and "
                + "source.",
            labelNames: ["app", "source"])
        followers = registry.gauge(
            "appstore_gateway_notification_followers",
            help: "StreamNotifications calls following live notifications now."
        )
        .labels()
        lag = registry.histogram(
            "appstore_gateway_notification_follow_lag_seconds",
            help: "From a notification's arrival in the store to its delivery to a live follower.",
            buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
        ).labels()
    }

    package func reject(_ reason: String) { rejected?.labels(reason).increment() }
}
