import AppStoreDomain
import GatewayFoundation

extension GatewayConfiguration {
    /// Reads the admin port's keys: `admin: HOST:PORT` as before, or a mapping of `admin.listen` and
    /// `admin.bearerTokenFile`. `APPSTORE_GATEWAY_ADMIN` overrides the address in either form. The token file
    /// itself is read and checked where it is used (`AdminBearerToken`).
    static func adminPort(_ reader: ConfigurationReader, into config: inout GatewayConfiguration)
        -> [ConfigurationError]
    {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        key { () throws(ConfigurationError) in
            let section = reader.isMapping("admin")
            let key = section ? "admin.listen" : "admin"
            // `admin.listen` is read even when the variable wins, so it is never called an unknown key.
            let listed = try reader.string(key)
            guard let text = section ? reader.environmentOverride("admin") ?? listed : listed else { return }
            guard !text.isEmpty else {
                config.admin = nil
                return
            }
            guard let address = ListenAddress(parsing: text) else {
                throw ConfigurationError(key: key, problem: "must be HOST:PORT (e.g. 0.0.0.0:9090), got '\(text)'")
            }
            config.admin = address
        }
        key { () throws(ConfigurationError) in
            if let path = try reader.string("admin.bearerTokenFile") { config.adminBearerTokenFile = path }
        }
        return problems
    }
}
