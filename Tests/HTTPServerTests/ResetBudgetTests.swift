import GatewayFoundation
import Testing

@testable import HTTPServer

/// The budget of unanswered resets as a value: a burst, a refill rate, time given by hand.
@Suite struct ResetBudgetTests {
    /// How many of `times.count` resets, one at each instant (milliseconds), the budget allowed.
    func allowed(_ budget: inout ResetBudget, at times: [Int64]) -> Int {
        times.filter { budget.unansweredReset(now: .ms($0)) }.count
    }

    @Test func theBurstIsAllowedAndTheNextResetIsNot() {
        var budget = ResetBudget(UnansweredResetLimit(burst: 5, perSecond: 0), now: .ms(0))
        let burst = allowed(&budget, at: Array(repeating: 0, count: 5))
        let after = allowed(&budget, at: [0, 3_600_000])  // no rate: the burst is all there is
        #expect(burst == 5 && after == 0)
    }

    @Test func theRateRefillsUpToTheBurstAndNoFurther() {
        var budget = ResetBudget(UnansweredResetLimit(burst: 10, perSecond: 100), now: .ms(0))
        let burst = allowed(&budget, at: Array(repeating: 0, count: 10))
        let early = allowed(&budget, at: Array(repeating: 9, count: 5))  // 0.9 of a reset
        let later = allowed(&budget, at: Array(repeating: 30, count: 5))  // 3.0 since the start
        let rested = allowed(&budget, at: Array(repeating: 60_000, count: 50))  // the burst again, not more
        #expect([burst, early, later, rested] == [10, 0, 3, 10])
    }

    /// A client resetting at the rate, forever, never runs out; a little faster, it does.
    @Test func aSteadyRateWithinTheLimitLastsForever() {
        var steady = ResetBudget(UnansweredResetLimit(burst: 2, perSecond: 200), now: .ms(0))
        var faster = ResetBudget(UnansweredResetLimit(burst: 2, perSecond: 200), now: .ms(0))
        let every5ms = allowed(&steady, at: (1...10_000).map { Int64($0) * 5 })
        let every4ms = allowed(&faster, at: (1...10_000).map { Int64($0) * 4 })
        #expect(every5ms == 10_000)
        #expect(every4ms > 7_900 && every4ms < 8_100)  // 2 + 200/s × 40 s
    }

    @Test func aClockThatGoesBackRefillsNothing() {
        var budget = ResetBudget(UnansweredResetLimit(burst: 1, perSecond: 1_000), now: .ms(1_000))
        let results = [1_000, 10, 1_001].map { budget.unansweredReset(now: .ms($0)) }
        #expect(results == [true, false, true])
    }

    @Test func extremeLimitsNeitherOverflowNorRefuse() {
        var huge = ResetBudget(UnansweredResetLimit(burst: .max, perSecond: .max), now: .ms(0))
        let first = allowed(&huge, at: Array(repeating: 0, count: 1_000))
        let last = (0..<1_000).filter { _ in huge.unansweredReset(now: MonotonicInstant(nanoseconds: .max)) }.count
        var none = ResetBudget(UnansweredResetLimit(burst: -3, perSecond: -1), now: .ms(0))
        let refused = !none.unansweredReset(now: .ms(1_000))
        #expect(first == 1_000 && last == 1_000 && refused)
    }

    @Test func errorCodesAreNamedAsInTheRFC() {
        #expect(HTTP2ErrorCode.noError.name == "NO_ERROR")
        #expect(HTTP2ErrorCode.internalError.name == "INTERNAL_ERROR")
        #expect(HTTP2ErrorCode.enhanceYourCalm.name == "ENHANCE_YOUR_CALM")
        #expect(HTTP2ErrorCode(rawValue: 0xd).name == "HTTP_1_1_REQUIRED")
        #expect(HTTP2ErrorCode(rawValue: 0xff).name == "0xff")
    }
}

extension MonotonicInstant {
    /// The instant `milliseconds` after the clock's origin.
    fileprivate static func ms(_ milliseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: milliseconds * 1_000_000)
    }
}
