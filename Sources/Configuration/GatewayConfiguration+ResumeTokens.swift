import AppStoreDomain
import GatewayFoundation

extension GatewayConfiguration {
    /// Reads `notifications.resumeTokenKeyFile` and `notifications.resumeTokenMaxAge` (the ring file itself
    /// is read and checked where it is used: `ResumeTokenKeyRing`), and refuses the key this version
    /// replaced, `notifications.resumeTokenKey`, whose file held raw bytes rather than a key ring.
    static func resumeTokens(_ reader: ConfigurationReader, into config: inout GatewayConfiguration)
        -> [ConfigurationError]
    {
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        let prefix = "notifications"
        key { () throws(ConfigurationError) in
            guard try reader.string("\(prefix).resumeTokenKey") != nil else { return }
            throw ConfigurationError(
                key: "\(prefix).resumeTokenKey",
                problem: "was replaced by notifications.resumeTokenKeyFile, a key ring file with one base64 key "
                    + "(32 or more random bytes, e.g. `openssl rand -base64 32`) per line; tokens are no longer "
                    + "derived from the apps' keys")
        }
        key { () throws(ConfigurationError) in
            if let path = try reader.string("\(prefix).resumeTokenKeyFile") {
                config.notifications.resumeTokenKeyFile = path
            }
        }
        key { () throws(ConfigurationError) in
            guard let text = try reader.string("\(prefix).resumeTokenMaxAge") else { return }
            guard let value = days(text) ?? DurationText.milliseconds(text), value >= 1_000,
                value <= 3650 * 86_400_000
            else {
                throw ConfigurationError(
                    key: "\(prefix).resumeTokenMaxAge",
                    problem: "must be a duration between 1s and 3650d such as 30d or 12h, got '\(text)'")
            }
            config.notifications.resumeTokenMaxAge = .milliseconds(value)
        }
        return problems
    }
}
