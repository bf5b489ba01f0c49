import AppStoreDomain
import Edge
import Foundation
import Services

extension GatewayConfiguration {
    /// The `notifications.realtime` keys: the realtime broker's own settings.
    package typealias Realtime = RealtimeBroker.Settings

    /// Reads the `notifications.realtime` keys (after `apps` and `notifications.webhook`, which they check).
    static func realtime(_ reader: ConfigurationReader, into config: inout GatewayConfiguration)
        -> [ConfigurationError]
    {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        let prefix = "notifications.realtime"
        key { () throws(ConfigurationError) in
            guard let path = try reader.string("\(prefix).path"), !path.isEmpty else { return }
            guard path.hasPrefix("/"), path.utf8.count <= 256, !path.contains("?"),
                path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else {
                throw ConfigurationError(
                    key: "\(prefix).path",
                    problem: "must start with '/' and be at most 256 printable ASCII bytes without '?'")
            }
            guard config.notifications.webhook.listen != nil else {
                throw ConfigurationError(key: "\(prefix).path", problem: "needs notifications.webhook.listen")
            }
            guard path != config.notifications.webhook.path else {
                throw ConfigurationError(key: "\(prefix).path", problem: "must differ from notifications.webhook.path")
            }
            config.notifications.realtime.path = path
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("\(prefix).timeout") {
                guard (10...5_000).contains(v) else {
                    throw ConfigurationError(key: "\(prefix).timeout", problem: "must be between 10ms and 5s")
                }
                config.notifications.realtime.timeoutMilliseconds = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("\(prefix).maxRequestAge") {
                guard (1_000...3_600_000).contains(v) else {
                    throw ConfigurationError(key: "\(prefix).maxRequestAge", problem: "must be between 1s and 1h")
                }
                config.notifications.realtime.maxRequestAgeMilliseconds = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.integer("\(prefix).maxPendingPerStream", in: 1...4096) {
                config.notifications.realtime.maxPendingPerStream = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.integer("\(prefix).maxStreams", in: 1...10_000) {
                config.notifications.realtime.maxStreams = v
            }
        }
        let count: Int
        do throws(ConfigurationError) {
            count = try reader.count("\(prefix).defaults")
        } catch {
            return problems + [error]
        }
        for index in 0..<count {
            key { () throws(ConfigurationError) in
                let (app, answer) = try realtimeDefault(reader, at: "\(prefix).defaults[\(index)]", apps: config.apps)
                guard config.notifications.realtime.defaults[app] == nil else {
                    throw ConfigurationError(key: "\(prefix).defaults[\(index)].app", problem: "repeats app '\(app)'")
                }
                config.notifications.realtime.defaults[app] = answer
            }
        }
        return problems
    }

    /// One `defaults[i]` entry: the app's configured name and its answer.
    private static func realtimeDefault(
        _ reader: ConfigurationReader, at path: String, apps: [App]
    ) throws(ConfigurationError) -> (String, RealtimeDefault) {
        let named = try reader.string("\(path).app") ?? ""
        guard let app = apps.first(where: { $0.name == named || $0.bundleId == named }) else {
            throw ConfigurationError(
                key: "\(path).app", problem: "must name a configured app, got '\(named.prefix(256))'")
        }
        func uuid(_ name: String) throws(ConfigurationError) -> String {
            let text = try reader.string("\(path).\(name)") ?? ""
            guard text.utf8.count == 36, UUID(uuidString: text) != nil else {
                throw ConfigurationError(key: "\(path).\(name)", problem: "must be a UUID")
            }
            return text.lowercased()
        }
        func identifier(_ name: String, required: Bool) throws(ConfigurationError) -> String {
            let text = try reader.string("\(path).\(name)") ?? ""
            guard text.utf8.count <= 256, !required || !text.isEmpty else {
                throw ConfigurationError(key: "\(path).\(name)", problem: "must be 1 to 256 bytes")
            }
            return text
        }
        let messageIdentifier = try uuid("messageIdentifier")
        let productId = try identifier("productId", required: false)
        let offerIdentifier = try identifier("offerIdentifier", required: false)
        let billingPlanType = try identifier("billingPlanType", required: false)
        let signature = try reader.string("\(path).signature")
        if !offerIdentifier.isEmpty {
            guard !productId.isEmpty else {
                throw ConfigurationError(key: "\(path).productId", problem: "a promotional offer needs its product")
            }
            guard signature == nil || signature == "v1" || signature == "v2" else {
                throw ConfigurationError(key: "\(path).signature", problem: "must be v1 or v2")
            }
            return (
                app.name,
                .promotionalOffer(
                    messageIdentifier: messageIdentifier, productId: productId, offerIdentifier: offerIdentifier,
                    v1: signature == "v1")
            )
        }
        guard signature == nil else {
            throw ConfigurationError(key: "\(path).signature", problem: "is for promotional offers (offerIdentifier)")
        }
        if !productId.isEmpty {
            return (
                app.name,
                .alternateProduct(
                    messageIdentifier: messageIdentifier, productId: productId, billingPlanType: billingPlanType)
            )
        }
        return (app.name, .message(messageIdentifier: messageIdentifier))
    }
}
