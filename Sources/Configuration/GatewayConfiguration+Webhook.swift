import AppStoreClient
import AppStoreDomain
import Edge
import GatewayFoundation
import NotificationStore

extension GatewayConfiguration {
    /// The `notifications.webhook` keys: the webhook's own settings.
    package typealias Webhook = NotificationWebhook.Settings
    /// The `notifications.store` keys: the store's own settings.
    package typealias NotificationStorage = NotificationStoreSettings

    /// Reads the `notifications.webhook` and `notifications.store` keys (after `redis`, which they check).
    static func webhookAndStore(_ reader: ConfigurationReader, into config: inout GatewayConfiguration)
        -> [ConfigurationError]
    {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        let webhook = "notifications.webhook"
        key { () throws(ConfigurationError) in
            guard let text = try reader.string("\(webhook).listen"), !text.isEmpty else { return }
            guard let address = ListenAddress(parsing: text) else {
                throw ConfigurationError(
                    key: "\(webhook).listen", problem: "must be HOST:PORT (e.g. 0.0.0.0:8080), got '\(text)'")
            }
            config.notifications.webhook.listen = address
        }
        key { () throws(ConfigurationError) in
            guard let path = try reader.string("\(webhook).path") else { return }
            guard path.hasPrefix("/"), path.utf8.count <= 256, !path.contains("?"),
                path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else {
                throw ConfigurationError(
                    key: "\(webhook).path",
                    problem: "must start with '/' and be at most 256 printable ASCII bytes without '?'")
            }
            config.notifications.webhook.path = path
        }
        key { () throws(ConfigurationError) in
            let certificate = try reader.string("\(webhook).tlsCertificate") ?? ""
            let privateKey = try reader.string("\(webhook).tlsKey") ?? ""
            guard certificate.isEmpty == privateKey.isEmpty else {
                throw ConfigurationError(key: "\(webhook).tlsKey", problem: "tlsCertificate and tlsKey go together")
            }
            config.notifications.webhook.tlsCertificateFile = certificate
            config.notifications.webhook.tlsKeyFile = privateKey
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.integer("\(webhook).maxBodyBytes", in: 1024...(1 << 20)) {
                config.notifications.webhook.maxBodyBytes = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.integer("\(webhook).maxConnections", in: 1...100_000) {
                config.notifications.webhook.maxConnections = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("\(webhook).requestTimeout") {
                guard (100...600_000).contains(v) else {
                    throw ConfigurationError(key: "\(webhook).requestTimeout", problem: "must be between 100ms and 10m")
                }
                config.notifications.webhook.requestTimeout = .milliseconds(v)
            }
        }

        let store = "notifications.store"
        key { () throws(ConfigurationError) in
            if let path = try reader.string("\(store).sqlite") {
                guard !path.isEmpty else {
                    throw ConfigurationError(key: "\(store).sqlite", problem: "must be a file path")
                }
                config.notifications.store.sqlitePath = path
            }
        }
        key { () throws(ConfigurationError) in
            if let text = try reader.string("\(store).retention") {
                guard let v = days(text) ?? DurationText.milliseconds(text), v >= 3_600_000, v <= 3650 * 86_400_000
                else {
                    throw ConfigurationError(
                        key: "\(store).retention",
                        problem: "must be a duration between 1h and 3650d such as 30d or 72h, got '\(text)'")
                }
                config.notifications.store.retention = .milliseconds(v)
            }
        }
        key { () throws(ConfigurationError) in
            guard let redis = try reader.bool("\(store).redis") else { return }
            guard !redis || config.redis.url != nil else {
                throw ConfigurationError(key: "\(store).redis", problem: "needs redis.url")
            }
            config.notifications.store.redis = redis
        }
        key { () throws(ConfigurationError) in
            guard let uri = try reader.string("\(store).postgres") else { return }
            guard !uri.trimmingSpaces().isEmpty else {
                throw ConfigurationError(key: "\(store).postgres", problem: "must be a PostgreSQL connection URI")
            }
            guard !config.notifications.store.redis else {
                throw ConfigurationError(
                    key: "\(store).postgres", problem: "cannot be set with notifications.store.redis: pick one store")
            }
            var postgres = PostgresDatabase.Settings(uri: uri)
            if let path = try reader.string("\(store).postgresPasswordFile") { postgres.passwordFile = path }
            if let size = try reader.integer("\(store).postgresPoolSize", in: 1...64) { postgres.poolSize = size }
            config.notifications.store.postgres = postgres
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("\(store).reconcileInterval") {
                guard v == 0 || v >= 1_000 else {
                    throw ConfigurationError(
                        key: "\(store).reconcileInterval", problem: "must be 0 (off) or at least 1s")
                }
                config.notifications.store.reconcileInterval = v == 0 ? nil : .milliseconds(v)
            }
        }
        key { () throws(ConfigurationError) in
            if let text = try reader.string("\(store).reconcileWindow") {
                guard let v = days(text) ?? DurationText.milliseconds(text), v >= 60_000, v <= 30 * 86_400_000 else {
                    throw ConfigurationError(key: "\(store).reconcileWindow", problem: "must be between 1m and 30d")
                }
                config.notifications.store.reconcileWindow = .milliseconds(v)
            }
        }
        return problems
    }

    /// "30d" → milliseconds; nil for any other form.
    static func days(_ text: String) -> UInt64? {
        let trimmed = text.trimmingSpaces()
        guard trimmed.hasSuffix("d"), let number = Double(trimmed.dropLast()), number.isFinite, number >= 0,
            number <= 36_600
        else { return nil }
        return UInt64(number * 86_400_000)
    }
}
