import AppStoreClient
import AppStoreDomain
import Edge
import GRPC
import GatewayFoundation
import NotificationStore
import Services
import SignedData
import SubscriptionState

extension GatewayConfiguration {
    /// Parses and validates a YAML configuration; environment variables override keys (see
    /// `ConfigurationReader`). The first problem found is thrown, naming its key.
    package static func load(yaml: String, environment: [String: String] = [:]) throws(ConfigurationError) -> Self {
        let (config, problems) = try check(yaml: yaml, environment: environment)
        if let first = problems.first { throw first }
        return config
    }

    /// Parses a YAML configuration and returns every problem found, one per bad key (`check-config`
    /// reports them all at once). Only a document that is not YAML at all is thrown.
    package static func check(
        yaml: String, environment: [String: String] = [:]
    ) throws(ConfigurationError) -> (GatewayConfiguration, [ConfigurationError]) {
        let reader = try ConfigurationReader(yaml: yaml, environment: environment)
        var config = GatewayConfiguration()
        var problems: [ConfigurationError] = []
        // Each key (or group of keys read together) is checked on its own, so one bad key does not hide the next.
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        /// One key read by `read` into `path` when present.
        func set<Value>(
            _ path: WritableKeyPath<GatewayConfiguration, Value>,
            _ read: @autoclosure () throws(ConfigurationError) -> Value?
        ) {
            key { () throws(ConfigurationError) in if let value = try read() { config[keyPath: path] = value } }
        }

        key { () throws(ConfigurationError) in
            if let text = try reader.string("listen") { config.grpc.listen = try address(text, key: "listen") }
        }
        key { () throws(ConfigurationError) in
            if let threads = try reader.integer("threads", in: 0...1024) { config.grpc.threads = threads }
        }
        problems += adminPort(reader, into: &config)

        problems += transport(reader, into: &config)

        key { () throws(ConfigurationError) in
            config.rateLimits.defaults = try rateLimits(reader, prefix: "rateLimits", base: .defaults)
        }
        set(\.rateLimits.maxWait, try reader.duration("rateLimits.maxWait"))
        key { () throws(ConfigurationError) in
            config.apps = try apps(reader, defaultLimits: config.rateLimits.defaults)
        }
        key { () throws(ConfigurationError) in
            config.retries = try retries(reader)
        }
        key { () throws(ConfigurationError) in
            config.redis = try redis(reader)
        }
        problems += sinks(reader, into: &config)
        problems += access(reader, into: &config)
        problems += webhookAndStore(reader, into: &config)
        problems += realtime(reader, into: &config)
        set(\.history.maxResponseBytes, try reader.integer("history.maxResponseBytes", in: 1024...(1 << 30)))
        set(\.verification.allowUnboundVerification, try reader.bool("verification.allowUnboundVerification"))
        set(\.verification.poolThreads, try reader.integer("verification.poolThreads", in: 1...256))
        set(\.verification.poolQueue, try reader.integer("verification.poolQueue", in: 0...100_000))
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("verification.negativeCacheTTL") {
                guard v <= 3_600_000 else {
                    throw ConfigurationError(key: "verification.negativeCacheTTL", problem: "must be at most 1h")
                }
                config.verification.negativeCacheTTL = .milliseconds(v)
            }
        }
        set(\.history.maxPages, try reader.integer("history.maxPages", in: 1...10_000))
        key { () throws(ConfigurationError) in
            if let text = try reader.string("subscriptions.refundPolicy") {
                guard let policy = SubscriptionPolicy.RefundPolicy(rawValue: text) else {
                    throw ConfigurationError(
                        key: "subscriptions.refundPolicy", problem: "must be immediate or untilExpiry, got '\(text)'")
                }
                config.subscriptions.refundPolicy = policy
            }
        }
        set(\.subscriptions.appleReadWeight, try reader.integer("subscriptions.appleReadWeight", in: 1...1_000))
        set(\.subscriptions.recordCacheSize, try reader.integer("subscriptions.recordCacheSize", in: 0...1_000_000))
        key { () throws(ConfigurationError) in
            if let retention = try reader.duration("subscriptions.eventRetention") {
                guard retention >= .seconds(3600), retention <= .seconds(400 * 86_400) else {
                    throw ConfigurationError(
                        key: "subscriptions.eventRetention", problem: "must be between 1h and 400d")
                }
                config.subscriptions.eventRetention = retention
            }
        }
        key { () throws(ConfigurationError) in config.verification.onlineChecks = try onlineChecks(reader) }
        problems += resumeTokens(reader, into: &config)
        let (tracing, tracingProblems) = Self.tracing(reader, environment: environment)
        config.tracing = tracing
        problems += tracingProblems

        key { () throws(ConfigurationError) in
            if let v = try reader.string("apple.productionURL") {
                config.apple.productionURL = try url(v, key: "apple.productionURL")
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.string("apple.sandboxURL") {
                config.apple.sandboxURL = try url(v, key: "apple.sandboxURL")
            }
        }
        set(\.apple.caFile, try reader.string("apple.caFile"))
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("apple.requestTimeout") {
                guard v > 0 else {
                    throw ConfigurationError(key: "apple.requestTimeout", problem: "must be more than 0")
                }
                config.apple.requestTimeout = .milliseconds(v)
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try reader.milliseconds("apple.connectTimeout") {
                guard v > 0 else {
                    throw ConfigurationError(key: "apple.connectTimeout", problem: "must be more than 0")
                }
                config.apple.connectTimeout = .milliseconds(v)
            }
        }
        set(\.apple.allowReadableKeyFiles, try reader.bool("apple.allowReadableKeyFiles"))
        set(\.apple.allowInsecureURL, try reader.bool("apple.allowInsecureURL"))
        set(\.apple.trustSystemCAs, try reader.bool("apple.trustSystemCAs"))

        key { () throws(ConfigurationError) in
            if let roots = try reader.strings("verification.rootCertificates") {
                config.verification.rootCertificates = roots
            }
        }
        set(\.verification.chainCacheSize, try reader.integer("verification.chainCacheSize", in: 1...1_000_000))
        set(\.verification.signatureCacheSize, try signatureCacheSize(reader))
        set(\.verification.useCurrentTime, try reader.bool("verification.useCurrentTime"))

        key { () throws(ConfigurationError) in
            if let level = try reader.string("logging.level") {
                let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
                guard levels.contains(level) else {
                    throw ConfigurationError(
                        key: "logging.level",
                        problem: "must be one of \(levels.joined(separator: ", ")), got '\(level)'")
                }
                config.logging.level = level
            }
        }
        key { () throws(ConfigurationError) in
            if let format = try reader.string("logging.format") {
                guard ["json", "text"].contains(format) else {
                    throw ConfigurationError(key: "logging.format", problem: "must be json or text, got '\(format)'")
                }
                config.logging.format = format
            }
        }
        set(\.logging.accessLog, try reader.bool("logging.accessLog"))

        for unknown in reader.unknownKeys()
        where !problems.contains(where: { unknown.hasPrefix(Self.section(of: $0.key)) }) {
            problems.append(
                ConfigurationError(key: unknown, problem: "unknown key (misspelt, or not a setting of this version)"))
        }
        problems += appleTransportProblems(config.apple)
        return (config, problems)
    }

    /// The section a problem's key belongs to (`apps[0].keyId` → `apps[0]`, `rateLimits.getHistory.burst` →
    /// `rateLimits.getHistory`): keys beside a bad one may be left unread, and are not also called unknown.
    static func section(of key: String) -> String {
        if key.hasPrefix("apps["), let close = key.firstIndex(of: "]") { return String(key[...close]) }
        guard let dot = key.lastIndex(of: ".") else { return key }
        return String(key[..<dot])
    }

    /// Plain-HTTP Apple URLs would carry the request JWT (a bearer credential for the whole team) in clear.
    static func appleTransportProblems(_ apple: Apple) -> [ConfigurationError] {
        guard !apple.allowInsecureURL else { return [] }
        return [("apple.productionURL", apple.productionURL), ("apple.sandboxURL", apple.sandboxURL)]
            .filter { !$0.1.lowercased().hasPrefix("https://") }
            .map {
                ConfigurationError(
                    key: $0.0,
                    problem: "must be an https URL (got '\($0.1)'); set apple.allowInsecureURL: true "
                        + "only for a local test double")
            }
    }

    /// Resolves relative file paths (keys, CA bundle, roots) against `directory`, the configuration file's
    /// folder, so a configuration works from any working directory.
    package mutating func resolvePaths(relativeTo directory: String) {
        func resolve(_ path: String) -> String {
            path.isEmpty || path.hasPrefix("/") ? path : directory + "/" + path
        }
        for index in apps.indices { apps[index].privateKeyFile = resolve(apps[index].privateKeyFile) }
        apple.caFile = resolve(apple.caFile)
        adminBearerTokenFile = resolve(adminBearerTokenFile)
        notifications.resumeTokenKeyFile = resolve(notifications.resumeTokenKeyFile)
        notifications.store.sqlitePath = resolve(notifications.store.sqlitePath)
        for index in subscriptions.webhooks.indices {
            subscriptions.webhooks[index].secretFile = resolve(subscriptions.webhooks[index].secretFile)
        }
        notifications.webhook.tlsCertificateFile = resolve(notifications.webhook.tlsCertificateFile)
        notifications.webhook.tlsKeyFile = resolve(notifications.webhook.tlsKeyFile)
        redis.caFile = resolve(redis.caFile)
        redis.certFile = resolve(redis.certFile)
        redis.keyFile = resolve(redis.keyFile)
        verification.rootCertificates = verification.rootCertificates.map(resolve)
        resolveAccessPaths(resolve)
    }

    /// `<prefix>.sandboxFactor` and `<prefix>.<endpoint>.{perSecond,burst}` on top of `base`.
    private static func rateLimits(
        _ reader: ConfigurationReader, prefix: String, base: RateLimits
    ) throws(ConfigurationError) -> RateLimits {
        var limits = base
        if let v = try reader.double("\(prefix).sandboxFactor", in: 0.000_001...1) { limits.sandboxFactor = v }
        for endpoint in AppleEndpoint.allCases {
            let key = "\(prefix).\(endpoint.configName)"
            let perSecond = try reader.double("\(key).perSecond", in: 0.000_1...1_000_000)
            let burst = try reader.integer("\(key).burst", in: 1...1_000_000)
            guard perSecond != nil || burst != nil else { continue }
            let current = limits.rate(for: endpoint, in: .production)
            limits.overrides[endpoint] = EndpointRate(
                perSecond: perSecond ?? current.perSecond,
                burst: burst ?? (perSecond == nil ? current.burst : nil))
        }
        return limits
    }

    private static func retries(_ reader: ConfigurationReader) throws(ConfigurationError) -> RetryPolicy {
        var policy = RetryPolicy.defaults
        if let v = try reader.integer("retries.maxAttempts", in: 1...10) { policy.maxAttempts = v }
        if let v = try reader.milliseconds("retries.initialBackoff") { policy.initialBackoff = .milliseconds(v) }
        if let v = try reader.milliseconds("retries.maxBackoff") { policy.maxBackoff = .milliseconds(v) }
        if let v = try reader.double("retries.multiplier", in: 1...10) { policy.multiplier = v }
        if let v = try reader.milliseconds("retries.minimumAttemptTime") {
            policy.minimumAttemptTime = .milliseconds(v)
        }
        if let v = try reader.milliseconds("retries.deadlineMargin") { policy.deadlineMargin = .milliseconds(v) }
        guard policy.maxBackoff >= policy.initialBackoff else {
            throw ConfigurationError(
                key: "retries.maxBackoff", problem: "must not be shorter than retries.initialBackoff")
        }
        return policy
    }

    private static func apps(
        _ reader: ConfigurationReader, defaultLimits: RateLimits
    ) throws(ConfigurationError) -> [App] {
        var apps: [App] = []
        var names: Set<String> = []
        for index in 0..<(try reader.count("apps")) {
            let key = "apps[\(index)]"
            func required(_ field: String) throws(ConfigurationError) -> String {
                guard let value = try reader.string("\(key).\(field)"), !value.isEmpty else {
                    throw ConfigurationError(key: "\(key).\(field)", problem: "is required")
                }
                return value
            }
            let bundleId = try required("bundleId")
            let name = try reader.string("\(key).name") ?? bundleId
            let environmentText = try reader.string("\(key).environment") ?? "auto"
            guard let environment = EnvironmentPolicy(rawValue: environmentText) else {
                throw ConfigurationError(
                    key: "\(key).environment",
                    problem: "must be production, sandbox, auto or xcode, got '\(environmentText)'")
            }
            // An Xcode app never calls Apple: its key settings are optional (checked when given).
            let keyId = environment == .xcode ? try reader.string("\(key).keyId") ?? "" : try required("keyId")
            guard
                (environment == .xcode && keyId.isEmpty)
                    || (keyId.count == 10 && keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }))
            else {
                throw ConfigurationError(
                    key: "\(key).keyId",
                    problem: "must be the 10-character key id from App Store Connect, got '\(keyId)'")
            }
            var appAppleId: Int64?
            if let id = try reader.integer("\(key).appAppleId", in: 1...Int.max) { appAppleId = Int64(id) }
            if (environment == .production || environment == .auto) && appAppleId == nil {
                throw ConfigurationError(
                    key: "\(key).appAppleId",
                    problem: "is required for production data (environment \(environment.rawValue))")
            }
            for alias in Set([name, bundleId]) where names.contains(alias) {
                throw ConfigurationError(key: "\(key).name", problem: "'\(alias)' names two apps")
            }
            names.insert(name)
            if bundleId != name { names.insert(bundleId) }
            let fallback = try reader.bool("\(key).sandboxFallbackOnUnauthorized") ?? false
            let limits = try rateLimits(reader, prefix: "\(key).rateLimits", base: defaultLimits)
            var app =
                App(
                    name: name, bundleId: bundleId, appAppleId: appAppleId,
                    issuerId: environment == .xcode
                        ? try reader.string("\(key).issuerId") ?? "" : try required("issuerId"),
                    keyId: keyId,
                    privateKeyFile: environment == .xcode
                        ? try reader.string("\(key).privateKeyFile") ?? "" : try required("privateKeyFile"),
                    environment: environment,
                    sandboxFallbackOnUnauthorized: fallback, rateLimits: limits == defaultLimits ? nil : limits)
            app.entitlements = try entitlements(reader, key: "\(key).entitlements")
            apps.append(app)
        }
        return apps
    }

    /// `apps[i].entitlements`: `{<name>: [product ids]}`. Names are 1–64 letters, digits, `_`, `-` or `.`-free
    /// (a name is a key of the YAML path); each list holds 1–1,000 product ids of 1–256 bytes.
    private static func entitlements(
        _ reader: ConfigurationReader, key: String
    ) throws(ConfigurationError) -> [String: Set<String>] {
        guard reader.isPresent(key) else { return [:] }
        guard reader.isMapping(key) else {
            throw ConfigurationError(key: key, problem: "must map entitlement names to lists of product ids")
        }
        var entitlements: [String: Set<String>] = [:]
        let names = try reader.keys(key)
        guard names.count <= 1_000 else { throw ConfigurationError(key: key, problem: "at most 1000 entitlements") }
        for name in names {
            let valid =
                (1...64).contains(name.utf8.count)
                && name.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
                }
            guard valid else {
                throw ConfigurationError(
                    key: "\(key).\(name)", problem: "an entitlement name is 1 to 64 ASCII letters, digits, '_' or '-'")
            }
            guard let products = try reader.strings("\(key).\(name)"), !products.isEmpty, products.count <= 1_000,
                products.allSatisfy({ (1...256).contains($0.utf8.count) })
            else {
                throw ConfigurationError(
                    key: "\(key).\(name)", problem: "must list 1 to 1000 product ids (each 1 to 256 bytes)")
            }
            entitlements[name] = Set(products)
        }
        return entitlements
    }

    private static func address(_ text: String, key: String) throws(ConfigurationError) -> ListenAddress {
        guard let address = ListenAddress(parsing: text) else {
            throw ConfigurationError(
                key: key, problem: "must be HOST:PORT (e.g. 0.0.0.0:50051 or [::1]:50051), got '\(text)'")
        }
        return address
    }

    private static func url(_ text: String, key: String) throws(ConfigurationError) -> String {
        guard text.hasPrefix("https://") || text.hasPrefix("http://"), text.count > 8 else {
            throw ConfigurationError(key: key, problem: "must be an http(s) URL, got '\(text)'")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
