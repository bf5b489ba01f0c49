import AppStoreDomain
import CallerAuthentication
import Edge
import GatewayFoundation

extension GatewayConfiguration {
    /// The `tls` keys: the caller-access watcher's own.
    package typealias TLS = AccessFileWatcher.TLS

    /// How callers authenticate (keys under `authentication`).
    package struct Authentication: Sendable, Hashable {
        /// `authentication.jwt`: bearer tokens in the `authorization` metadata; nil = not accepted.
        package var jwt: JWT?

        package init() {}

        /// `authentication.jwt`: the bearer-token verifier's own settings.
        package typealias JWT = BearerTokenVerifier.Settings
    }

    /// Reads `tls`, `authentication` and `callers` into `config` (after `apps`, which callers name), returning
    /// one problem per bad key.
    static func access(_ reader: ConfigurationReader, into config: inout GatewayConfiguration) -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        key { () throws(ConfigurationError) in config.tls = try tls(reader) }
        key { () throws(ConfigurationError) in config.authentication.jwt = try jwt(reader) }
        key { () throws(ConfigurationError) in
            config.callers = try callers(
                reader, apps: config.apps, commonNames: config.tls?.identityFromCommonName ?? false)
        }
        if config.callers != nil && config.authentication.jwt == nil && (config.tls?.clientCAFile ?? "").isEmpty {
            problems.append(
                ConfigurationError(
                    key: "callers",
                    problem: "needs a way for callers to prove their identity: authentication.jwt or tls.clientCAFile"))
        }
        return problems
    }

    /// Makes the TLS and JWKS file paths absolute against the configuration file's folder.
    mutating func resolveAccessPaths(_ resolve: (String) -> String) {
        if var tls {
            tls.certificateFile = resolve(tls.certificateFile)
            tls.privateKeyFile = resolve(tls.privateKeyFile)
            tls.clientCAFile = resolve(tls.clientCAFile)
            self.tls = tls
        }
        if var jwt = authentication.jwt {
            jwt.jwksFile = resolve(jwt.jwksFile)
            authentication.jwt = jwt
        }
    }

    private static func tls(_ reader: ConfigurationReader) throws(ConfigurationError) -> TLS? {
        let certificate = try reader.string("tls.certificateFile") ?? ""
        let key = try reader.string("tls.privateKeyFile") ?? ""
        let clientCA = try reader.string("tls.clientCAFile") ?? ""
        let commonName = try reader.bool("tls.identityFromCommonName") ?? false
        let sessionMaxAge = try reader.milliseconds("tls.sessionMaxAge")
        guard !(certificate.isEmpty && key.isEmpty && clientCA.isEmpty && !commonName && sessionMaxAge == nil) else {
            return nil
        }
        guard !certificate.isEmpty else {
            throw ConfigurationError(key: "tls.certificateFile", problem: "is required when tls is set")
        }
        guard !key.isEmpty else {
            throw ConfigurationError(key: "tls.privateKeyFile", problem: "is required when tls is set")
        }
        var tls = TLS()
        tls.certificateFile = certificate
        tls.privateKeyFile = key
        tls.clientCAFile = clientCA
        guard !commonName || !clientCA.isEmpty else {
            throw ConfigurationError(
                key: "tls.identityFromCommonName", problem: "needs tls.clientCAFile (no client certificates without it)"
            )
        }
        tls.identityFromCommonName = commonName
        if let sessionMaxAge {
            guard (1_000...7 * 86_400_000).contains(sessionMaxAge) else {
                throw ConfigurationError(key: "tls.sessionMaxAge", problem: "must be between 1s and 168h (7 days)")
            }
            tls.sessionMaxAge = .milliseconds(Int64(sessionMaxAge))
        }
        return tls
    }

    private static func jwt(_ reader: ConfigurationReader) throws(ConfigurationError) -> Authentication.JWT? {
        let prefix = "authentication.jwt"
        let file = try reader.string("\(prefix).jwksFile") ?? ""
        let issuer = try reader.string("\(prefix).issuer") ?? ""
        let audiences = try reader.strings("\(prefix).audiences") ?? []
        let maxLifetime = try reader.milliseconds("\(prefix).maxLifetime")
        guard !(file.isEmpty && issuer.isEmpty && audiences.isEmpty && maxLifetime == nil) else { return nil }
        guard !file.isEmpty else { throw ConfigurationError(key: "\(prefix).jwksFile", problem: "is required") }
        guard !issuer.isEmpty else { throw ConfigurationError(key: "\(prefix).issuer", problem: "is required") }
        guard !audiences.isEmpty, audiences.allSatisfy({ !$0.isEmpty }) else {
            throw ConfigurationError(key: "\(prefix).audiences", problem: "must list at least one non-empty audience")
        }
        var jwt = Authentication.JWT()
        jwt.jwksFile = file
        jwt.issuer = issuer
        jwt.audiences = audiences
        if let maxLifetime {
            guard (1_000...366 * 86_400_000).contains(maxLifetime) else {
                throw ConfigurationError(
                    key: "\(prefix).maxLifetime", problem: "must be between 1s and 8784h (366 days)")
            }
            jwt.maxLifetime = .milliseconds(maxLifetime)
        }
        return jwt
    }

    private static func callers(
        _ reader: ConfigurationReader, apps: [App], commonNames: Bool
    ) throws(ConfigurationError) -> [Caller]? {
        guard reader.isPresent("callers") else { return nil }
        let directory = AppDirectory(apps)
        var callers: [Caller] = []
        var seen: [CallerName: String] = [:]
        for index in 0..<(try reader.count("callers")) {
            let key = "callers[\(index)]"
            guard let identity = try reader.string("\(key).identity"), !identity.isEmpty else {
                throw ConfigurationError(key: "\(key).identity", problem: "is required")
            }
            guard identity.utf8.count <= 1024 else {
                throw ConfigurationError(key: "\(key).identity", problem: "must be at most 1024 bytes")
            }
            let name = CallerName(listed: identity)
            guard !name.value.isEmpty else {
                throw ConfigurationError(
                    key: "\(key).identity", problem: "'\(identity)' names nothing after its prefix")
            }
            if case .commonName = name, !commonNames {
                throw ConfigurationError(
                    key: "\(key).identity",
                    problem: "'\(identity)' is a certificate CN, which identifies nobody unless "
                        + "tls.identityFromCommonName is true (prefer a URI or DNS SAN)")
            }
            if let first = seen.updateValue(identity, forKey: name) {
                let same = first == identity ? "" : " (as '\(first)')"
                throw ConfigurationError(key: "\(key).identity", problem: "'\(identity)' is listed twice\(same)")
            }
            guard let named = try reader.strings("\(key).apps"), !named.isEmpty else {
                throw ConfigurationError(key: "\(key).apps", problem: "must list app names or bundle ids, or \"*\"")
            }
            var resolved: [String] = []
            for (position, name) in named.enumerated() {
                if name == "*" {
                    resolved.append("*")
                    continue
                }
                // Not `app(named:)`'s empty-name rule: an empty entry is a mistake here.
                guard !name.isEmpty, let app = try? directory.app(named: name) else {
                    throw ConfigurationError(
                        key: "\(key).apps[\(position)]", problem: "'\(name)' is not a configured app name or bundle id")
                }
                if !resolved.contains(app.name) { resolved.append(app.name) }
            }
            let weight = try reader.integer("\(key).weight", in: 1...1_000) ?? 1
            let permissions = try permissions(reader, key: "\(key).permissions")
            let maxRealtimeStreams =
                try reader.integer("\(key).maxRealtimeStreams", in: 0...256) ?? Caller.defaultMaxRealtimeStreams
            callers.append(
                Caller(
                    identity: identity, apps: resolved, weight: weight, permissions: permissions,
                    maxRealtimeStreams: maxRealtimeStreams))
        }
        return callers
    }

    /// `callers[i].permissions`: nil when absent; else a non-empty list of `read`, `write`, `sign`, `realtime`.
    private static func permissions(
        _ reader: ConfigurationReader, key: String
    ) throws(ConfigurationError) -> CallerPermissions? {
        guard let names = try reader.strings(key) else { return nil }
        let known = CallerPermissions.named.map(\.name).joined(separator: ", ")
        guard !names.isEmpty else {
            throw ConfigurationError(
                key: key, problem: "lists no permission: list some of \(known), or remove the caller")
        }
        var granted: CallerPermissions = []
        for (position, name) in names.enumerated() {
            guard let permission = CallerPermissions(named: name) else {
                throw ConfigurationError(
                    key: "\(key)[\(position)]", problem: "'\(EchoedInput.clip(name))' is not one of \(known)")
            }
            granted.insert(permission)
        }
        return granted
    }
}
