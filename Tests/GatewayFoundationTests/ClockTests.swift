import Testing

@testable import GatewayFoundation

@Suite struct ClockTests {
    @Test func manualClockAdvancesBothReadings() {
        let clock = ManualClock(
            wall: WallTime(millisecondsSince1970: 1_000), monotonic: MonotonicInstant(nanoseconds: 5))
        clock.advance(by: .milliseconds(1_500))
        #expect(clock.wallNow() == WallTime(millisecondsSince1970: 2_500))
        #expect(clock.monotonicNow() == MonotonicInstant(nanoseconds: 1_500_000_005))
    }

    @Test func wallStepLeavesMonotonicAlone() {
        let clock = ManualClock()
        let before = clock.monotonicNow()
        clock.setWall(WallTime(millisecondsSince1970: 0))
        #expect(clock.monotonicNow() == before)
        #expect(clock.wallNow().millisecondsSince1970 == 0)
    }

    @Test func wallTimeMapsOntoMonotonicTimeline() {
        let clock = ManualClock(
            wall: WallTime(millisecondsSince1970: 10_000), monotonic: MonotonicInstant(nanoseconds: 0))
        let instant = clock.monotonicInstant(at: WallTime(millisecondsSince1970: 12_500))
        #expect(instant == MonotonicInstant(nanoseconds: 2_500_000_000))
    }

    @Test func systemClockIsPlausibleAndMonotonic() {
        let clock = SystemClock()
        #expect(clock.wallNow().millisecondsSince1970 > 1_600_000_000_000)
        let first = clock.monotonicNow()
        #expect(clock.monotonicNow() >= first)
    }

    @Test func durationConversions() {
        #expect(Duration.milliseconds(3).wholeNanoseconds == 3_000_000)
        #expect(Duration.nanoseconds(1).millisecondsRoundedUp == 1)
        #expect(Duration.nanoseconds(-5).millisecondsRoundedUp == 0)
        #expect(Duration.seconds(2).millisecondsRoundedUp == 2_000)
        #expect(Duration.seconds(Int64.max).wholeNanoseconds == .max)
        #expect(WallTime(millisecondsSince1970: -1).secondsSince1970 == -1)
        #expect(WallTime(millisecondsSince1970: 1_999).secondsSince1970 == 1)
    }
}
