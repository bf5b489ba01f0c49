import GatewayFoundation

/// Who a call is from, as the server's `CallGuard` admitted it. Opaque to the gRPC layer: it carries the value
/// into the call's context, hands it back to the guard for each `authorize`, names it in the call's log line,
/// and lets it bind itself for the handler's task (wherever its owner keeps "the current caller").
public protocol AdmittedCaller: Sendable {
    /// The caller as people read it: the `caller` field of the call's log line, spans.
    var displayName: String { get }
    /// Runs `body` with this caller bound as the current caller of the task.
    func bindingCurrent<Result: Sendable>(_ body: () async -> Result) async -> Result
}

/// An admitted caller held by reference (see `ServerContext.caller`), with the apps its call named, so the call
/// can be checked again when the guard's policy changes (`CallGuard.recheck`).
final class AdmittedCallerBox: Sendable {
    /// Most apps remembered for one call (a ServeRealtimeRequests stream names at most 64).
    static let maxApps = 256

    let caller: any AdmittedCaller
    private let apps = Lock<[String]>([])

    init(_ caller: any AdmittedCaller) { self.caller = caller }

    /// Remembers that the call named `app` (before the guard decides on it).
    func named(app: String) {
        apps.withLock { apps in
            if apps.count < Self.maxApps && !apps.contains(app) { apps.append(app) }
        }
    }

    /// The apps the call named so far.
    var namedApps: [String] { apps.withLock { $0 } }
}
