/// Who a call is from, as the server's `CallGuard` admitted it. Opaque to the gRPC layer: it carries the value
/// into the call's context, hands it back to the guard for each `authorize`, names it in the call's log line,
/// and lets it bind itself for the handler's task (wherever its owner keeps "the current caller").
public protocol AdmittedCaller: Sendable {
    /// The caller as people read it: the `caller` field of the call's log line, spans.
    var displayName: String { get }
    /// Runs `body` with this caller bound as the current caller of the task.
    func bindingCurrent<Result: Sendable>(_ body: () async -> Result) async -> Result
}

/// An admitted caller held by reference (see `ServerContext.caller`).
final class AdmittedCallerBox: Sendable {
    let caller: any AdmittedCaller

    init(_ caller: any AdmittedCaller) { self.caller = caller }
}
