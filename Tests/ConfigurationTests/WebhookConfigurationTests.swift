import AppStoreDomain
import Configuration
import Edge
import GatewayFoundation
import NotificationStore
import Redis
import Testing

/// The `notifications.webhook` and `notifications.store` keys, exactly as the webhook's contract fixes them.
@Suite struct WebhookConfigurationTests {
    @Test func theContractsKeysLoad() throws {
        let config = try GatewayConfiguration.load(
            yaml: """
                notifications:
                  webhook:
                    listen: "0.0.0.0:8080"
                    path: "/apple/notifications"
                  store:
                    sqlite: "/var/lib/appstore-gateway/notifications.db"
                    retention: 30d
                """)
        #expect(config.notifications.webhook.listen == ListenAddress(host: "0.0.0.0", port: 8080))
        #expect(config.notifications.webhook.path == "/apple/notifications")
        #expect(config.notifications.store.sqlitePath == "/var/lib/appstore-gateway/notifications.db")
        #expect(config.notifications.store.retention == .milliseconds(30 * 86_400_000))
        #expect(config.notifications.store.redis == false)
    }

    @Test func noListenMeansNoReceiverAndDefaultsStand() throws {
        let config = try GatewayConfiguration.load(yaml: "")
        #expect(config.notifications.webhook.listen == nil)
        #expect(config.notifications.webhook.path == "/apple/notifications")
        #expect(config.notifications.store.retention == .milliseconds(30 * 86_400_000))
        #expect(config.notifications.store.reconcileInterval == .milliseconds(600_000))
        #expect(
            try GatewayConfiguration.load(yaml: "notifications: {webhook: {listen: ''}}").notifications.webhook.listen
                == nil)
    }

    @Test func theRedisStoreNeedsRedisURL() throws {
        let (_, problems) = try GatewayConfiguration.check(yaml: "notifications: {store: {redis: true}}")
        #expect(problems.map(\.key) == ["notifications.store.redis"])
        let config = try GatewayConfiguration.load(
            yaml: "redis: {url: 'redis://127.0.0.1:6379/0'}\nnotifications: {store: {redis: true, retention: 72h}}")
        #expect(config.notifications.store.redis)
        #expect(config.notifications.store.retention == .milliseconds(72 * 3_600_000))
    }

    @Test func reconcileInterval0TurnsComparisonsOff() throws {
        let off = try GatewayConfiguration.load(yaml: "notifications: {store: {reconcileInterval: 0}}")
        #expect(off.notifications.store.reconcileInterval == nil)
        let on = try GatewayConfiguration.load(yaml: "notifications: {store: {reconcileInterval: 90s}}")
        #expect(on.notifications.store.reconcileInterval == .seconds(90))
    }

    @Test func badValuesAreNamed() throws {
        let (_, problems) = try GatewayConfiguration.check(
            yaml: """
                notifications:
                  webhook: {listen: nowhere, path: "no-slash", maxBodyBytes: 10, tlsCertificate: cert.pem}
                  store: {retention: 1e30d, sqlite: "", reconcileInterval: 10ms}
                """)
        #expect(
            Set(problems.map(\.key)) == [
                "notifications.webhook.listen", "notifications.webhook.path", "notifications.webhook.maxBodyBytes",
                "notifications.webhook.tlsKey", "notifications.store.retention", "notifications.store.sqlite",
                "notifications.store.reconcileInterval",
            ])
    }

    @Test func relativePathsFollowTheConfigurationFile() throws {
        var config = try GatewayConfiguration.load(yaml: "notifications: {store: {sqlite: data/n.db}}")
        config.resolvePaths(relativeTo: "/etc/gateway")
        #expect(config.notifications.store.sqlitePath == "/etc/gateway/data/n.db")
    }
}
