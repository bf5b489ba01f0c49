import AppStoreDomain
import Configuration

/// Why the gateway did not start: what failed and, for a bad configuration, the problem of each key. The CLI
/// logs it as its one start-up failure line.
public struct GatewayStartError: Error, CustomStringConvertible {
    /// What failed ("invalid configuration", "cannot listen on …").
    public var message: String
    /// The configuration keys at fault, first one first; empty when no key is.
    public var problems: [ConfigurationError]

    /// A failure `message` caused by `problems`.
    public init(_ message: String, problems: [ConfigurationError] = []) {
        self.message = message
        self.problems = problems
    }

    /// A configuration that names a file, address or value that does not work.
    static func invalidConfiguration(_ problems: ConfigurationError...) -> GatewayStartError {
        GatewayStartError("invalid configuration", problems: problems)
    }

    public var description: String { problems.first.map { "\(message): \($0)" } ?? message }
}
