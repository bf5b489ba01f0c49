import GatewayFoundation

extension NotificationWebhook {
    /// The App Store Server Notifications receiver (keys under `notifications.webhook`).
    package struct Settings: Sendable, Hashable {
        /// `notifications.webhook.listen`: HOST:PORT of the receiver (HTTP/1.1; with TLS, also HTTP/2 by ALPN);
        /// nil (absent or "") = no receiver.
        package var listen: ListenAddress?
        /// `notifications.webhook.path`: where Apple posts. Default "/apple/notifications".
        package var path = "/apple/notifications"
        /// `notifications.webhook.tlsCertificate` / `tlsKey`: PEM files to serve HTTPS; empty = cleartext
        /// (an ingress usually terminates TLS).
        package var tlsCertificateFile = ""
        package var tlsKeyFile = ""
        /// `notifications.webhook.maxBodyBytes`: the largest body accepted (413 beyond). Default 64 KiB; Apple's
        /// notifications are a few KiB.
        package var maxBodyBytes = 64 * 1024
        /// `notifications.webhook.maxConnections`: open connections at most. Default 256.
        package var maxConnections = 256
        /// `notifications.webhook.requestTimeout`: a request (head and body) must arrive within this. Default 10s.
        /// HTTP/1.1: counted from its first byte, the connection closes past it; HTTP/2: from its head, 408.
        package var requestTimeout: Duration = .seconds(10)
        package init() {}
    }
}
