import Foundation

/// The source of "now" for verification and cache expiry, injected so tests are exact.
package protocol VerificationClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
package struct SystemVerificationClock: VerificationClock {
    package init() {}
    package func now() -> Date { Date() }
}
