import HTTPServer

/// Decides who may call, in one place, before any handler runs: the router asks `admit` for every call
/// except health and reflection when the request head is complete, and the typed handlers ask `authorize`
/// with the request's `app` once the message is decoded, before the handler's body. Both run on the event
/// loop, so they must be cheap (a cache lookup on the warm path) and never block. A class: the router and each
/// call's context hold it as one reference, not a boxed value copied per call.
public protocol CallGuard: AnyObject, Sendable {
    /// The caller of a new call to `method`: its identity (nil = anonymous, allowed in open mode), or the
    /// UNAUTHENTICATED / PERMISSION_DENIED status to end it with.
    func admit(method: String, metadata: [(name: String, value: String)], peer: PeerCertificateIdentity?)
        -> Result<(any AdmittedCaller)?, RPCStatus>
    /// Nil when `caller` (what `admit` returned) may use `app` (as a request names it); else the PERMISSION_DENIED status.
    func authorize(_ caller: (any AdmittedCaller)?, app: String, method: String) -> RPCStatus?
    /// Nil when a call still open may go on under the guard's policy as it is now: its `caller` (what `admit`
    /// returned), its `method` and the `apps` `authorize` allowed it; else the status to end it with. Asked on
    /// the call's loop for every open call after the policy changed (`GRPCServer.recheckOpenCalls`).
    func recheck(_ caller: (any AdmittedCaller)?, method: String, apps: [String]) -> RPCStatus?
}

extension CallGuard {
    /// A guard whose policy never changes lets every open call go on.
    public func recheck(_ caller: (any AdmittedCaller)?, method: String, apps: [String]) -> RPCStatus? { nil }
}

/// One loop's handle on the server's `CallGuard`: what a call's context holds, so the calls of a loop retain
/// and release an object of their own loop (only `authorize` still retains the shared guard while it runs).
final class LoopCallGuard: Sendable {
    let shared: any CallGuard

    init(_ shared: any CallGuard) { self.shared = shared }
}
