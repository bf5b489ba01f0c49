import GatewayFoundation

/// A configuration problem, naming the key (as a dotted path, e.g. `apps[0].keyId`) and what is wrong.
package struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The dotted key path, e.g. "limits.maxReceiveMessageBytes".
    package var key: String
    /// What is wrong with it, e.g. "must be a positive integer, got 'abc'".
    package var problem: String

    package init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    package var description: String { key.isEmpty ? problem : "\(key): \(problem)" }
}
