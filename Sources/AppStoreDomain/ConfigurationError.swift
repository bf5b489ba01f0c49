import GatewayFoundation

/// A configuration problem, naming the key (as a dotted path, e.g. `apps[0].keyId`) and what is wrong.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The dotted key path, e.g. "limits.maxReceiveMessageBytes".
    public var key: String
    /// What is wrong with it, e.g. "must be a positive integer, got 'abc'".
    public var problem: String

    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { key.isEmpty ? problem : "\(key): \(problem)" }
}
