import AppStoreDomain
import GatewayFoundation

extension GatewayConfiguration {
    /// Apple's online checks for signed data, as Apple's verifier offers them: the OCSP revocation status of
    /// the leaf and intermediate certificates, asked of the responder their Authority Information Access
    /// names, and chain validation at the current time instead of the payload's signedDate.
    public struct OnlineChecks: Sendable, Hashable {
        /// `verification.onlineChecks`: on or off. Default false.
        public var enabled = false
        /// `verification.ocspTimeout`: the longest one OCSP request may take. Default 5s.
        public var timeout: Duration = .seconds(5)
        /// `verification.ocspCacheSize`: OCSP answers kept (one per certificate, each until its nextUpdate,
        /// at most a day). Default 1024.
        public var cacheSize = 1024

        public init() {}
    }

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
