import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

@Suite struct RetryAfterTests {
    let now = WallTime(millisecondsSince1970: 1_750_000_000_000)

    @Test func appleMillisecondsForm() {
        #expect(RetryAfter.parse("1750000005123", now: now) == WallTime(millisecondsSince1970: 1_750_000_005_123))
    }

    @Test func unixSecondsForm() {
        #expect(RetryAfter.parse("1750000007", now: now) == WallTime(millisecondsSince1970: 1_750_000_007_000))
    }

    @Test func deltaSecondsForm() {
        #expect(RetryAfter.parse("120", now: now) == now + .seconds(120))
        #expect(RetryAfter.parse("0", now: now) == now)
        #expect(RetryAfter.parse(" \t30 ", now: now) == now + .seconds(30))
    }

    @Test func imfFixdateForm() {
        #expect(
            RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now)
                == WallTime(millisecondsSince1970: 784_111_777_000))
        #expect(
            RetryAfter.parse("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == WallTime(millisecondsSince1970: 0))
        #expect(
            RetryAfter.parse("Tue, 29 Feb 2028 23:59:59 GMT", now: now)
                == WallTime(millisecondsSince1970: 1_835_481_599_000))
    }

    @Test func pastTimesGiveZeroDelay() throws {
        let past = try #require(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now))
        #expect(RetryAfter.delay(until: past, from: now) == .zero)
        let future = try #require(RetryAfter.parse("1750000001500", now: now))
        #expect(RetryAfter.delay(until: future, from: now) == .milliseconds(1_500))
    }

    @Test(arguments: [
        "", "   ", "-5", "+5", "1.5", "abc", "5 s", "99999999999999999999999",
        "Sun, 06 Nov 1994 08:49:37 UTC", "Mon, 06 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Thu, 29 Feb 2029 00:00:00 GMT",
    ])
    func garbageIsNil(value: String) {
        #expect(RetryAfter.parse(value, now: now) == nil)
    }

    @Test func delaysAreCapped() throws {
        let far = try #require(RetryAfter.parse("9999999", now: now))
        #expect(RetryAfter.delay(until: far, from: now) == .seconds(3600))
        #expect(RetryAfter.delay(until: far, from: now, cap: .seconds(5)) == .seconds(5))
    }

    @Test func hugeButRepresentableMilliseconds() {
        #expect(
            RetryAfter.parse("9223372036854775807", now: now) == WallTime(millisecondsSince1970: .max))
    }

    @Test func daysSinceEpochAgreesWithKnownDates() {
        #expect(CivilDate.daysSinceEpoch(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilDate.daysSinceEpoch(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilDate.daysSinceEpoch(year: 1969, month: 12, day: 31) == -1)
    }
}
