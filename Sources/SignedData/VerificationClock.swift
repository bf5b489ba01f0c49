import Foundation

/// The source of "now" for verification and cache expiry, injected so tests are exact.
public protocol VerificationClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemVerificationClock: VerificationClock {
    public init() {}
    public func now() -> Date { Date() }
}
