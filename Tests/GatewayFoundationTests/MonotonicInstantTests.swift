import Testing

@testable import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// The one monotonic clock and its arithmetic: instants in Int64 nanoseconds, intervals as `Duration`.
@Suite struct MonotonicInstantTests {
    @Test func nowReadsTheMonotonicClockAndNeverGoesBack() {
        var reading = timespec()
        clock_gettime(CLOCK_MONOTONIC, &reading)
        let before = Int64(reading.tv_sec) * 1_000_000_000 + Int64(reading.tv_nsec)
        let first = MonotonicInstant.now()
        let second = MonotonicInstant.now()
        #expect(first.nanoseconds >= before && second >= first)
        #expect(SystemClock().monotonicNow() >= second)
    }

    @Test func arithmeticSaturatesAtTheEndsOfTheClock() {
        let start = MonotonicInstant(nanoseconds: 1_000)
        #expect(start + .seconds(Int64.max) == MonotonicInstant(nanoseconds: .max))
        #expect(MonotonicInstant(nanoseconds: -1_000) - .seconds(Int64.max) == MonotonicInstant(nanoseconds: .min))
        #expect(start - .seconds(Int64.min) == MonotonicInstant(nanoseconds: .max))  // no trap negating Int64.min
        #expect(MonotonicInstant(nanoseconds: .max) - MonotonicInstant(nanoseconds: -1) == .nanoseconds(Int64.max))
        #expect(MonotonicInstant(nanoseconds: .min) - MonotonicInstant(nanoseconds: 1) == .nanoseconds(Int64.min))
        #expect(start + .microseconds(3) - start == .nanoseconds(3_000))
    }

    @Test func secondsSinceAnEarlierInstant() {
        let start = MonotonicInstant(nanoseconds: 5)
        #expect(MonotonicInstant(nanoseconds: 1_500_000_005).seconds(since: start) == 1.5)
        #expect(start.seconds(since: MonotonicInstant(nanoseconds: 1_000_000_005)) == -1)
    }

    @Test func wholeNanosecondsRoundTowardZeroAndSaturate() {
        #expect(Duration.nanoseconds(-7).wholeNanoseconds == -7)
        #expect((Duration.nanoseconds(1) / 2).wholeNanoseconds == 0)
        #expect((Duration.nanoseconds(-3) / 2).wholeNanoseconds == -1)
        #expect(Duration.seconds(9_223_372_036).wholeNanoseconds == 9_223_372_036_000_000_000)
        #expect(Duration.seconds(9_223_372_037).wholeNanoseconds == .max)
        #expect(Duration.seconds(Int64.min).wholeNanoseconds == .min)
    }
}

extension MonotonicInstantTests {
    @Test func advancingByNanosecondsIsAddingTheDuration() {
        let start = MonotonicInstant(nanoseconds: 40)
        for duration in [Duration.seconds(120), .nanoseconds(-41), .seconds(Int64.max), .zero] {
            #expect(start.advanced(byNanoseconds: duration.wholeNanoseconds) == start + duration)
        }
        #expect(start.advanced(byNanoseconds: .max) == MonotonicInstant(nanoseconds: .max))
    }
}
