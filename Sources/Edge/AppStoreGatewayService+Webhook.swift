import Configuration
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

    /// The hosted realtime URL for `settings` (nil when its path is empty), answering through this service's
    /// `ServeRealtimeRequests` streams.
    public func realtimeEndpoint(
        _ settings: GatewayConfiguration.Realtime, metrics: RealtimeMetrics
    ) -> RealtimeEndpoint? {
        guard !settings.path.isEmpty else { return nil }
        realtime.reportStreams(to: metrics.streams)
        return RealtimeEndpoint(
            path: settings.path, timeout: .milliseconds(Int64(clamping: settings.timeoutMilliseconds)),
            verifier: verifier, pool: pool, apps: apps, defaults: settings.defaults, broker: realtime,
            answering: realtimeAnswering, metrics: metrics)
    }
}
