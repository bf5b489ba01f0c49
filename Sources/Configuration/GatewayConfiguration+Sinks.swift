import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import Services

extension GatewayConfiguration {
    /// The `subscriptions.webhooks` and `notifications.forward` keys (after `apps`, whose names they check).
    static func sinks(_ reader: ConfigurationReader, into config: inout GatewayConfiguration) -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        var webhooks: [TeamWebhook.Settings] = []
        var count = 0
        do throws(ConfigurationError) {
            count = try reader.count("subscriptions.webhooks")
        } catch {
            problems.append(error)
        }
        for index in 0..<count {
            let key = "subscriptions.webhooks[\(index)]"
            do throws(ConfigurationError) {
                var webhook = TeamWebhook.Settings(
                    url: try sinkURL(reader, key: key), secretFile: try reader.string("\(key).secretFile") ?? "")
                guard !webhook.secretFile.isEmpty else {
                    throw ConfigurationError(
                        key: "\(key).secretFile", problem: "is required: a file with the team's secret (one per line)")
                }
                for (item, name) in (try reader.strings("\(key).apps") ?? []).enumerated() {
                    guard let app = config.apps.first(where: { $0.name == name || $0.bundleId == name }) else {
                        throw ConfigurationError(
                            key: "\(key).apps[\(item)]", problem: "'\(name)' is not a configured app (apps[].name)")
                    }
                    if !webhook.apps.contains(app.name) { webhook.apps.append(app.name) }
                }
                for (item, name) in (try reader.strings("\(key).types") ?? []).enumerated() {
                    guard let type = TeamWebhook.eventType(named: name) else {
                        throw ConfigurationError(
                            key: "\(key).types[\(item)]",
                            problem: "'\(name)' is not a subscription event type (e.g. RENEWAL or "
                                + "SUBSCRIPTION_EVENT_TYPE_RENEWAL)")
                    }
                    if !webhook.types.contains(type) { webhook.types.append(type) }
                }
                webhook.retries = try retries(reader, key: key)
                if let earlier = webhooks.firstIndex(where: { $0.url == webhook.url }) {
                    throw ConfigurationError(
                        key: "\(key).url", problem: "names the same URL as subscriptions.webhooks[\(earlier)]")
                }
                webhooks.append(webhook)
            } catch {
                problems.append(error)
            }
        }
        config.subscriptions.webhooks = webhooks
        do throws(ConfigurationError) {
            config.subscriptions.redisStream = try redisStream(reader, redisURL: config.redis.url != nil)
        } catch {
            problems.append(error)
        }

        var relays: [NotificationRelay.Settings] = []
        do throws(ConfigurationError) {
            count = try reader.count("notifications.forward")
        } catch {
            problems.append(error)
            count = 0
        }
        for index in 0..<count {
            let key = "notifications.forward[\(index)]"
            do throws(ConfigurationError) {
                var relay = NotificationRelay.Settings(url: try sinkURL(reader, key: key))
                relay.retries = try retries(reader, key: key)
                if let earlier = relays.firstIndex(where: { $0.url == relay.url }) {
                    throw ConfigurationError(
                        key: "\(key).url", problem: "names the same URL as notifications.forward[\(earlier)]")
                }
                relays.append(relay)
            } catch {
                problems.append(error)
            }
        }
        config.notifications.forward = relays
        return problems
    }

    /// `subscriptions.redisStream: {key, maxLen, maxBackoff, maxAge}`: nil when absent; needs `redis.url`.
    private static func redisStream(_ reader: ConfigurationReader, redisURL: Bool) throws(ConfigurationError)
        -> RedisStreamSink.Settings?
    {
        let key = "subscriptions.redisStream"
        guard reader.isPresent(key) || reader.environmentOverride("\(key).key") != nil else { return nil }
        if reader.isPresent(key) { _ = try reader.keys(key) }
        guard let name = try reader.string("\(key).key"), !name.isEmpty else {
            throw ConfigurationError(
                key: "\(key).key", problem: "is required: the stream's key in the configured redis")
        }
        guard name.utf8.count <= 512, !name.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw ConfigurationError(key: "\(key).key", problem: "must be at most 512 bytes without spaces")
        }
        guard redisURL else {
            throw ConfigurationError(key: key, problem: "appends to the configured redis: set redis.url")
        }
        var settings = RedisStreamSink.Settings(key: name)
        if let length = try reader.integer("\(key).maxLen", in: 1...1_000_000_000) { settings.maxLength = length }
        // No `timeout` of its own: each append is bounded by `redis.timeout`.
        if reader.isPresent("\(key).timeout") {
            throw ConfigurationError(
                key: "\(key).timeout", problem: "is not a key: each append is bounded by redis.timeout")
        }
        settings.retries = try retries(reader, key: key, timeout: false)
        return settings
    }

    /// `<key>.url`: required, http or https with a host.
    private static func sinkURL(_ reader: ConfigurationReader, key: String) throws(ConfigurationError) -> String {
        guard let url = try reader.string("\(key).url"), !url.isEmpty else {
            throw ConfigurationError(key: "\(key).url", problem: "is required")
        }
        if let problem = TeamWebhook.urlProblem(url) { throw ConfigurationError(key: "\(key).url", problem: problem) }
        return url
    }

    /// `<key>.timeout` (100ms–10m; only when `timeout`), `<key>.maxBackoff` (100ms–24h) and `<key>.maxAge`
    /// (1s–400d).
    private static func retries(_ reader: ConfigurationReader, key: String, timeout: Bool = true)
        throws(ConfigurationError) -> DeliveryRetries
    {
        func read(_ name: String, _ range: ClosedRange<UInt64>, _ bounds: String) throws(ConfigurationError)
            -> Duration?
        {
            guard let value = try reader.milliseconds("\(key).\(name)") else { return nil }
            guard range.contains(value) else {
                throw ConfigurationError(key: "\(key).\(name)", problem: "must be between \(bounds)")
            }
            return .milliseconds(Int64(value))
        }
        var retries = DeliveryRetries()
        if timeout, let value = try read("timeout", 100...600_000, "100ms and 10m") { retries.timeout = value }
        if let value = try read("maxBackoff", 100...86_400_000, "100ms and 24h") { retries.maxBackoff = value }
        if let value = try read("maxAge", 1_000...(400 * 86_400_000), "1s and 400d") { retries.maxAge = value }
        return retries
    }
}
