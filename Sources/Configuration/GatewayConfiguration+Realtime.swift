import Foundation

extension GatewayConfiguration {
    /// The hosted Retention Messaging realtime URL (keys under `notifications.realtime`), served on the webhook
    /// listener: Apple's realtime requests are answered by the teams' `ServeRealtimeRequests` streams.
    public struct Realtime: Sendable, Hashable {
        /// `notifications.realtime.path`: where Apple posts realtime requests on the webhook listener; "" (the
        /// default) = no realtime URL. Needs `notifications.webhook.listen` and a path other than the webhook's.
        public var path = ""
        /// `notifications.realtime.timeout`: how long the gateway waits for a stream's answer, from the request's
        /// arrival, before it answers the app's default. Default 400ms, below the response time Apple's
        /// performance test allows (its `responseTimeThreshold`, 500 ms in Apple's examples); 10ms to 5s.
        public var timeoutMilliseconds: UInt64 = 400
        /// `notifications.realtime.maxPendingPerStream`: unanswered requests one stream holds at most; past it
        /// the next stream of the app is asked, or the default answered. Default 64; 1 to 4096.
        public var maxPendingPerStream = 64
        /// `notifications.realtime.maxStreams`: `ServeRealtimeRequests` streams open at once on this replica;
        /// one more is refused RESOURCE_EXHAUSTED. Default 256; 1 to 10000.
        public var maxStreams = 256
        /// `notifications.realtime.maxRequestAge`: a request signed longer ago than this is refused (400), and a
        /// repeat of one answered within it gets the same bytes again, so a captured request cannot be replayed for
        /// a fresh signature. Default 60s; 1s to 1h.
        public var maxRequestAgeMilliseconds: UInt64 = 60_000
        /// How far a request's `signedDate` may lie ahead of the gateway's clock before it is refused (400): the
        /// two clocks' disagreement tolerated. 10 s, not a key.
        public var clockSkewMilliseconds: UInt64 = 10_000
        /// Answered requests remembered at most within `maxRequestAge` (past it the oldest is forgotten first):
        /// 100 000, about 1 600 a second for the default age, not a key.
        public var maxRememberedAnswers = 100_000
        /// Bytes of remembered answers at most (identifiers, signed answers): 64 MiB, not a key.
        public var maxRememberedAnswerBytes = 64 << 20
        /// `notifications.realtime.defaults`: each app's answer when no stream answers in time; an app without
        /// one answers an empty body (Apple then shows its own default message).
        public var defaults: [String: RealtimeDefault] = [:]
        public init() {}
    }

    /// One app's default realtime answer: `notifications.realtime.defaults[i]` with `app`, and `messageIdentifier`
    /// plus, for a switch-plan message, `productId` (and optional `billingPlanType`), or for a promotional
    /// offer `productId`, `offerIdentifier` and `signature` (v2, the default, or v1), signed when answered.
    public enum RealtimeDefault: Sendable, Hashable {
        /// Apple's `message`.
        case message(messageIdentifier: String)
        /// Apple's `alternateProduct`.
        case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String)
        /// Apple's `promotionalOffer`, signed with the app's key when answered (`v1`: the StoreKit 1 signature).
        case promotionalOffer(messageIdentifier: String, productId: String, offerIdentifier: String, v1: Bool)
    }

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
