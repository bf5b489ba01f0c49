import AppStoreDomain
import GatewayFoundation
import SignedData

extension GatewayConfiguration {

    /// Reads the online-check keys of `verification`.
    static func onlineChecks(_ reader: ConfigurationReader) throws(ConfigurationError) -> OnlineChecks {
        var checks = OnlineChecks()
        if let v = try reader.bool("verification.onlineChecks") { checks.enabled = v }
        if let v = try reader.milliseconds("verification.ocspTimeout") {
            guard (1...60_000).contains(v) else {
                throw ConfigurationError(key: "verification.ocspTimeout", problem: "must be between 1ms and 60s")
            }
            checks.timeout = .milliseconds(v)
        }
        if let v = try reader.integer("verification.ocspCacheSize", in: 1...1_000_000) { checks.cacheSize = v }
        return checks
    }
}
