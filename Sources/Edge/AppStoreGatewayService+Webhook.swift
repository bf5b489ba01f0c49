import GatewayFoundation
import NotificationStore
import Services

extension AppStoreGatewayService {
    /// The webhook receiver for `webhook`, verifying with this service's verifier and pool, storing in `live`.
    public func webhook(
        path: String, live: LiveNotificationFeed, clock: any GatewayClock = SystemClock()
    ) -> NotificationWebhook {
        NotificationWebhook(
            path: path, verifier: verifier, pool: pool, apps: apps, store: live.store, clock: clock,
            metrics: live.metrics, retention: retention)
    }
}
