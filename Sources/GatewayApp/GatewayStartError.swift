import AppStoreDomain
import Configuration

/// Why the gateway did not start: what failed and, for a bad configuration, the problem of each key. The CLI
/// logs it as its one start-up failure line.
package struct GatewayStartError: Error, CustomStringConvertible {
    /// What failed ("invalid configuration", "cannot listen on …").
    package var message: String
    /// The configuration keys at fault, first one first; empty when no key is.
    package var problems: [ConfigurationError]

    /// A failure `message` caused by `problems`.
    package init(_ message: String, problems: [ConfigurationError] = []) {
        self.message = message
        self.problems = problems
    }

    /// A configuration that names a file, address or value that does not work.
    static func invalidConfiguration(_ problems: ConfigurationError...) -> GatewayStartError {
        GatewayStartError("invalid configuration", problems: problems)
    }

    package var description: String { problems.first.map { "\(message): \($0)" } ?? message }
}
