import GatewayFoundation

/// What the caller checks and the per-caller budget report (metrics), apart from `GatewayEvents` so the
/// sinks stay small. Called on hot paths, from any thread: implementations must be cheap and thread-safe.
public protocol AccessEvents: Sendable {
    /// A call was refused before any handler ran: `reason` is an `AuthenticationFailure` raw value or an
    /// `AccessRefusal.reason` (a fixed set).
    func callRefused(reason: String)
    /// A listed caller's call was admitted (`caller` is an identity from `callers`, so labels stay bounded).
    func callerAdmitted(caller: String)
    /// A listed caller's Apple call waited `seconds` for its fair share of `app`'s bucket.
    func fairShareWaited(caller: String, app: String, seconds: Double)
    /// A listed caller's Apple call was refused because its share of `app`'s bucket would take too long.
    func fairShareRefused(caller: String, app: String)
}

extension AccessEvents {
    public func callRefused(reason: String) {}
    public func callerAdmitted(caller: String) {}
    public func fairShareWaited(caller: String, app: String, seconds: Double) {}
    public func fairShareRefused(caller: String, app: String) {}
}

/// Records nothing.
public struct SilentAccessEvents: AccessEvents {
    public init() {}
}
