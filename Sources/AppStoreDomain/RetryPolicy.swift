import GatewayFoundation

/// How the upstream client retries an Apple call: exponential backoff with full jitter, a cap on
/// attempts, and never an attempt that could not finish before the caller's deadline.
package struct RetryPolicy: Sendable, Hashable {
    /// Attempts in total, the first included. Default 3.
    package var maxAttempts: Int
    /// Backoff ceiling before the second attempt. Default 100 ms.
    package var initialBackoff: Duration
    /// Largest backoff ceiling. Default 2 s.
    package var maxBackoff: Duration
    /// Growth of the ceiling per attempt. Default 2.
    package var multiplier: Double
    /// The least time an attempt needs to be worth starting. Default 200 ms.
    package var minimumAttemptTime: Duration
    /// Kept free before the deadline to send the status back. Default 50 ms.
    package var deadlineMargin: Duration

    /// The defaults documented on each property.
    package static let defaults = RetryPolicy()

    /// A policy; unspecified values take the documented defaults.
    package init(
        maxAttempts: Int = 3, initialBackoff: Duration = .milliseconds(100), maxBackoff: Duration = .seconds(2),
        multiplier: Double = 2, minimumAttemptTime: Duration = .milliseconds(200),
        deadlineMargin: Duration = .milliseconds(50)
    ) {
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.multiplier = multiplier
        self.minimumAttemptTime = minimumAttemptTime
        self.deadlineMargin = deadlineMargin
    }

    /// The backoff ceiling after `failures` failed attempts (1 → `initialBackoff`), capped at `maxBackoff`.
    package func backoffCeiling(afterFailures failures: Int) -> Duration {
        let initial = Double(initialBackoff.wholeNanoseconds)
        let grown = initial * pow(multiplier, max(0, failures - 1))
        let capped = min(grown, Double(maxBackoff.wholeNanoseconds))
        return .nanoseconds(Int64(capped))
    }

    private func pow(_ base: Double, _ exponent: Int) -> Double {
        (0..<min(exponent, 64)).reduce(1.0) { product, _ in product * base }
    }
}

/// What one attempt at an Apple call came to.
package enum AttemptOutcome: Sendable, Hashable {
    /// Apple answered with success.
    case success
    /// Apple answered with an error status; `code` when the body was Apple's error JSON.
    case appleError(httpStatus: Int, code: AppleErrorCode?)
    /// No answer: connect, TLS or stream failure, or the attempt's own timeout.
    case connectionFailure(String)

    /// Whether the same request may succeed if repeated: Apple's retryable codes, a 5xx without
    /// Apple's JSON (a proxy or load balancer answered), and connection failures. 429 is not
    /// retried here: the rate limiter owns it. 5000000 is retried like 5000001 (Apple: "try again later").
    package var isRetryable: Bool {
        switch self {
        case .success: false
        case .appleError(let status, let code?): status != 429 && code.isRetryable
        case .appleError(let status, nil): (500...599).contains(status)
        case .connectionFailure: true
        }
    }
}

/// What to do after an attempt.
package enum RetryDecision: Sendable, Hashable {
    /// The call succeeded.
    case done
    /// Wait this long, then make the next attempt.
    case retry(after: Duration)
    /// Stop and report the last outcome.
    case giveUp(GiveUpReason)
}

/// Why retrying stopped.
package enum GiveUpReason: Sendable, Hashable {
    /// The outcome is final (a client error, or 429 for the rate limiter).
    case notRetryable
    /// `maxAttempts` attempts were made.
    case attemptsExhausted
    /// The next attempt could not finish before the deadline minus the margin.
    case deadlineTooClose
}

/// The retry state of one Apple call: feed it each attempt's outcome, it says whether and when to
/// try again. Pure: time and randomness come in as arguments.
package struct RetrySchedule: Sendable, Hashable {
    /// The policy in force.
    package let policy: RetryPolicy
    /// The caller's deadline, nil for none.
    package let deadline: MonotonicInstant?
    /// Attempts recorded so far.
    package private(set) var attemptsMade = 0

    /// A schedule for one call.
    package init(policy: RetryPolicy = .defaults, deadline: MonotonicInstant?) {
        self.policy = policy
        self.deadline = deadline
    }

    /// The latest instant an attempt may start at, nil without a deadline.
    package var latestAttemptStart: MonotonicInstant? {
        deadline.map { $0 - policy.deadlineMargin - policy.minimumAttemptTime }
    }

    /// Whether an attempt starting at `now` could finish in time.
    package func mayStartAttempt(now: MonotonicInstant) -> Bool {
        latestAttemptStart.map { now <= $0 } ?? true
    }

    /// The time budget of an attempt starting at `now` (deadline minus margin), nil without a deadline.
    package func attemptTimeout(now: MonotonicInstant) -> Duration? {
        deadline.map { max(.zero, ($0 - policy.deadlineMargin) - now) }
    }

    /// Records an attempt's outcome at `now` and decides. The delay is drawn uniformly from
    /// [0, ceiling] ("full jitter"), then shortened if needed so the attempt still fits the deadline.
    /// A call that is not `idempotent` is repeated only after an Apple error code that says it may be.
    package mutating func record(
        _ outcome: AttemptOutcome, now: MonotonicInstant, random: inout some RandomNumberGenerator,
        idempotent: Bool = true
    ) -> RetryDecision {
        attemptsMade += 1
        if outcome == .success { return .done }
        let retryable = idempotent ? outcome.isRetryable : outcome.isRetryableWithoutIdempotency
        guard retryable else { return .giveUp(.notRetryable) }
        guard attemptsMade < policy.maxAttempts else { return .giveUp(.attemptsExhausted) }
        let ceiling = policy.backoffCeiling(afterFailures: attemptsMade).wholeNanoseconds
        let fraction = Double(random.next() >> 11) / Double(1 << 53)
        var delay = Duration.nanoseconds(Int64(Double(ceiling) * fraction))
        if let latest = latestAttemptStart {
            guard now <= latest else { return .giveUp(.deadlineTooClose) }
            delay = min(delay, latest - now)
        }
        return .retry(after: delay)
    }
}
