import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

/// Returns the same value forever: 0 gives no wait, `.max` the full ceiling.
struct FixedRandom: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite struct RetryPolicyTests {
    let now = MonotonicInstant(nanoseconds: 0)

    @Test func classifiesOutcomes() {
        #expect(AttemptOutcome.appleError(httpStatus: 500, code: .generalInternalRetryable).isRetryable)
        #expect(AttemptOutcome.appleError(httpStatus: 404, code: .accountNotFoundRetryable).isRetryable)
        #expect(AttemptOutcome.appleError(httpStatus: 500, code: .generalInternal).isRetryable)
        #expect(!AttemptOutcome.appleError(httpStatus: 404, code: .transactionIdNotFound).isRetryable)
        #expect(AttemptOutcome.appleError(httpStatus: 503, code: nil).isRetryable)
        #expect(!AttemptOutcome.appleError(httpStatus: 401, code: nil).isRetryable)
        #expect(!AttemptOutcome.appleError(httpStatus: 429, code: .rateLimitExceeded).isRetryable)
        #expect(AttemptOutcome.connectionFailure("reset").isRetryable)
        #expect(!AttemptOutcome.success.isRetryable)
    }

    @Test func backoffCeilingGrowsAndCaps() {
        let policy = RetryPolicy(initialBackoff: .milliseconds(100), maxBackoff: .milliseconds(350))
        #expect(policy.backoffCeiling(afterFailures: 1) == .milliseconds(100))
        #expect(policy.backoffCeiling(afterFailures: 2) == .milliseconds(200))
        #expect(policy.backoffCeiling(afterFailures: 3) == .milliseconds(350))
        #expect(policy.backoffCeiling(afterFailures: 500) == .milliseconds(350))
    }

    @Test func fullJitterSpansZeroToCeiling() {
        var low = FixedRandom(value: 0)
        var high = FixedRandom(value: .max)
        var schedule = RetrySchedule(deadline: nil)
        #expect(schedule.record(.connectionFailure("x"), now: now, random: &low) == .retry(after: .zero))
        guard case .retry(let delay) = schedule.record(.connectionFailure("x"), now: now, random: &high) else {
            Issue.record("expected a retry")
            return
        }
        #expect(delay <= .milliseconds(200) && delay > .milliseconds(199))
    }

    @Test func stopsAfterMaxAttempts() {
        var random = FixedRandom(value: 0)
        var schedule = RetrySchedule(policy: RetryPolicy(maxAttempts: 2), deadline: nil)
        #expect(
            schedule.record(.appleError(httpStatus: 502, code: nil), now: now, random: &random) == .retry(after: .zero))
        #expect(
            schedule.record(.appleError(httpStatus: 502, code: nil), now: now, random: &random)
                == .giveUp(.attemptsExhausted))
        #expect(schedule.attemptsMade == 2)
    }

    @Test func finalOutcomesStopAtOnce() {
        var random = FixedRandom(value: 0)
        var schedule = RetrySchedule(deadline: nil)
        #expect(schedule.record(.success, now: now, random: &random) == .done)
        var failing = RetrySchedule(deadline: nil)
        #expect(
            failing.record(.appleError(httpStatus: 400, code: .generalBadRequest), now: now, random: &random)
                == .giveUp(.notRetryable))
    }

    @Test func neverSchedulesPastTheDeadline() {
        var high = FixedRandom(value: .max)
        // Deadline 1 s away; margin 50 ms and minimum attempt 200 ms leave starts up to 750 ms.
        let policy = RetryPolicy(maxAttempts: 10, initialBackoff: .seconds(1), maxBackoff: .seconds(1))
        var schedule = RetrySchedule(policy: policy, deadline: now + .seconds(1))
        #expect(schedule.mayStartAttempt(now: now))
        #expect(schedule.attemptTimeout(now: now) == .milliseconds(950))
        #expect(
            schedule.record(.connectionFailure("x"), now: now + .milliseconds(100), random: &high)
                == .retry(after: .milliseconds(650)))
        #expect(
            schedule.record(.connectionFailure("x"), now: now + .milliseconds(751), random: &high)
                == .giveUp(.deadlineTooClose))
        #expect(!schedule.mayStartAttempt(now: now + .milliseconds(751)))
        #expect(schedule.attemptTimeout(now: now + .seconds(2)) == .zero)
    }
}
