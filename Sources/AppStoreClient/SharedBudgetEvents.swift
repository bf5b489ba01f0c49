import AppStoreDomain
import Redis

/// What the shared (Redis) rate budget reports: reservations by outcome, mode changes and Redis round
/// trips. Called from the budget's own thread; implementations must be cheap and thread-safe.
public protocol SharedBudgetEvents: Sendable {
    /// One reservation for `app`/`endpoint` ended: `outcome` is "taken", "waited", "refused" or "fallback"
    /// (answered by the local fallback bucket).
    func sharedBudgetReservation(app: String, endpoint: String, outcome: SharedBudgetOutcome)
    /// The budget's mode is now `state`; `transition` is set when this is a change worth counting.
    func sharedBudgetMode(_ state: SharedBudgetMode.State, transition: SharedBudgetMode.Transition?)
    /// One Redis round trip (a pipeline of `commands`) took `seconds`; `failure` names what went wrong.
    func redisRoundTrip(seconds: Double, commands: Int, failure: RedisFailureKind?)
}

/// How one shared-budget reservation ended.
public enum SharedBudgetOutcome: String, Sendable, Hashable {
    /// A shared token, at once.
    case taken
    /// A shared token after a wait.
    case waited
    /// Refused by the shared bucket or a shared Retry-After block.
    case refused
    /// Answered by the local fallback bucket (Redis unreachable).
    case fallback
}

/// Records nothing.
public struct SilentSharedBudgetEvents: SharedBudgetEvents {
    public init() {}
    public func sharedBudgetReservation(app: String, endpoint: String, outcome: SharedBudgetOutcome) {}
    public func sharedBudgetMode(_ state: SharedBudgetMode.State, transition: SharedBudgetMode.Transition?) {}
    public func redisRoundTrip(seconds: Double, commands: Int, failure: RedisFailureKind?) {}
}
