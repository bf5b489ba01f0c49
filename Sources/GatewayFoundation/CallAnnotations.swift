/// Facts a handler learns about its call that belong in the call's log line: the app, Apple's request
/// id, the environment that answered. Reachable from anywhere in the handler's task as
/// `CallAnnotations.current` (a task-local the gRPC server binds), so deep layers need no extra parameter.
///
/// The call's identity (request id, trace and span ids, caller) is given at creation and only formatted
/// when `all` is read: a call nobody logs (a health check) never turns its ids into text.
public final class CallAnnotations: Sendable {
    /// The annotations of the call the current task serves, if any.
    @TaskLocal public static var current: CallAnnotations?

    /// What every call of the gRPC server carries, kept as given.
    public struct Identity: Sendable {
        /// The caller's `x-request-id` (already checked by `RequestID.accepted`), nil: generated from `trace`.
        public var requestID: String?
        public var trace: TraceContext
        /// The caller's identity, nil when anonymous ("-" in the line).
        public var caller: String?

        public init(requestID: String?, trace: TraceContext, caller: String?) {
            self.requestID = requestID
            self.trace = trace
            self.caller = caller
        }
    }

    /// The call's identity, when it has one.
    public let identity: Identity?
    private let values = Lock<[(String, String)]>([])

    public init(identity: Identity? = nil) {
        self.identity = identity
    }

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

    /// What was noted (not the identity), in the order first noted.
    public var noted: [(name: String, value: String)] {
        values.withLock { noted in noted.map { (name: $0.0, value: $0.1) } }
    }

    /// Everything noted, in the order first noted, after the call's identity (request_id, trace_id,
    /// span_id, caller) when it has one.
    public var all: [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        if let identity {
            result = [
                ("request_id", identity.requestID ?? RequestID.generated(for: identity.trace)),
                ("trace_id", identity.trace.traceID), ("span_id", identity.trace.spanID),
                ("caller", identity.caller ?? "-"),
            ]
        }
        values.withLock { noted in result += noted.lazy.map { (name: $0.0, value: $0.1) } }
        return result
    }
}
