import AppStoreDomain
import GatewayFoundation
import Logging
import NotificationStore
import Services

extension AppStoreGatewayService {
    /// The webhook receiver for `webhook`, verifying with this service's verifier and pool, storing in `live`,
    /// handing what it stored to this service's subscription projector (which projects `live`'s store).
    package func webhook(
        path: String, live: LiveNotificationFeed, clock: any GatewayClock = SystemClock()
    ) -> NotificationWebhook {
        var webhook = NotificationWebhook(
            path: path, verifier: verifier, pool: pool, apps: apps, store: live.store, clock: clock,
            metrics: live.metrics, retention: retention)
        webhook.deliveries = subscriptionProjector?.deliveries
        return webhook
    }

    /// The hosted realtime URL for `settings` (nil when its path is empty), answering through this service's
    /// `ServeRealtimeRequests` streams; `clock` tells each request's age. Warns of each default that is a V1
    /// promotional offer: its signature names no customer, so whoever sees one answer can redeem the offer.
    package func realtimeEndpoint(
        _ settings: RealtimeBroker.Settings, metrics: RealtimeMetrics, clock: any GatewayClock = SystemClock()
    ) -> RealtimeEndpoint? {
        guard !settings.path.isEmpty else { return nil }
        realtime.reportStreams(to: metrics.streams)
        let endpoint = RealtimeEndpoint(
            path: settings.path, timeout: .milliseconds(Int64(clamping: settings.timeoutMilliseconds)),
            verifier: verifier, pool: pool, apps: apps, defaults: settings.defaults, broker: realtime,
            answering: realtimeAnswering, metrics: metrics,
            replays: RealtimeReplays(
                limits: .init(
                    maxAgeMilliseconds: Int64(clamping: settings.maxRequestAgeMilliseconds),
                    clockSkewMilliseconds: Int64(clamping: settings.clockSkewMilliseconds),
                    maxEntries: settings.maxRememberedAnswers, maxBytes: settings.maxRememberedAnswerBytes)),
            clock: clock)
        for (app, answer) in settings.defaults.sorted(by: { $0.key < $1.key }) {
            guard case .promotionalOffer(_, _, _, v1: true) = answer else { continue }
            endpoint.logger.warning(
                """
                realtime default of app \(app) is a V1 promotional offer: its signature is bound to no customer, so \
                anyone who sees one answer can redeem the offer
                """,
                metadata: [
                    "app": "\(app)",
                    "hint": "use signature v2 (bound to the request's originalTransactionId), or a message",
                ])
        }
        return endpoint
    }
}
