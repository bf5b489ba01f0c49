import AppStoreDomain
import GatewayFoundation
import Testing

/// Writes that are not idempotent are repeated only when Apple's error code says the request was not carried out.
struct IdempotentRetryTests {
    private func decide(_ outcome: AttemptOutcome, idempotent: Bool) -> RetryDecision {
        var schedule = RetrySchedule(policy: .defaults, deadline: nil)
        var random = SystemRandomNumberGenerator()
        return schedule.record(outcome, now: MonotonicInstant(nanoseconds: 0), random: &random, idempotent: idempotent)
    }

    private func retries(_ decision: RetryDecision) -> Bool {
        if case .retry = decision { return true }
        return false
    }

    @Test func ambiguousFailuresAreRetriedOnlyForIdempotentCalls() {
        for outcome: AttemptOutcome in [.connectionFailure("reset"), .appleError(httpStatus: 502, code: nil)] {
            #expect(retries(decide(outcome, idempotent: true)))
            #expect(decide(outcome, idempotent: false) == .giveUp(.notRetryable))
        }
    }

    @Test func applesRetryableCodesAreRetriedForEveryCall() {
        let outcome = AttemptOutcome.appleError(httpStatus: 500, code: .generalInternalRetryable)
        #expect(retries(decide(outcome, idempotent: false)))
        let internalError = AttemptOutcome.appleError(httpStatus: 500, code: .generalInternal)
        #expect(decide(internalError, idempotent: false) == .giveUp(.notRetryable))
    }

    @Test func theEndpointTableSaysWhichWritesRepeatSafely() {
        let unsafe = AppleEndpoint.allCases.filter { !$0.isIdempotent }
        let expected: Set<AppleEndpoint> = [
            .extendSubscriptionRenewalDate, .extendRenewalDatesForAllActiveSubscribers, .requestTestNotification,
            .uploadImage, .deleteImage, .uploadMessage, .deleteMessage, .deleteDefaultMessage, .deleteRealtimeUrl,
            .initiatePerformanceTest,
        ]
        #expect(Set(unsafe) == expected)
        // Setting one value repeats safely.
        #expect(AppleEndpoint.configureDefaultMessage.isIdempotent && AppleEndpoint.configureRealtimeUrl.isIdempotent)
        let reads = AppleEndpoint.allCases.filter { $0.isRead }
        #expect(reads.allSatisfy { $0.isIdempotent })
        #expect(!AppleEndpoint.setAppAccountToken.isRead && AppleEndpoint.getNotificationHistory.isRead)
    }
}
