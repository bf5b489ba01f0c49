import Synchronization

/// Facts a handler learns about its call that belong in the call's log line: the app, Apple's request
/// id, the environment that answered. Reachable from anywhere in the handler's task as
/// `CallAnnotations.current` (a task-local the gRPC server binds), so deep layers need no extra parameter.
public final class CallAnnotations: Sendable {
    /// The annotations of the call the current task serves, if any.
    @TaskLocal public static var current: CallAnnotations?

    private let values = Mutex<[(String, String)]>([])

    public init() {}

    /// Notes `value` under `name` (a later note of the same name replaces it).
    public func note(_ name: String, _ value: String) {
        values.withLock { values in
            if let index = values.firstIndex(where: { $0.0 == name }) {
                values[index].1 = value
            } else {
                values.append((name, value))
            }
        }
    }

    /// Everything noted, in the order first noted.
    public var all: [(name: String, value: String)] {
        values.withLock { $0.map { (name: $0.0, value: $0.1) } }
    }
}
