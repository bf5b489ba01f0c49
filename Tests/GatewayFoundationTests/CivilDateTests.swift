import GatewayFoundation
import Testing

/// The one calendar: days and dates both ways, around the epoch, leap days and far from it; RFC 3339 instants read
/// and written.
@Suite struct CivilDateTests {
    @Test func daysAndDatesAreInverse() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 97) {
            let date = CivilDate.date(daysSinceEpoch: days)
            #expect(CivilDate.daysSinceEpoch(year: date.year, month: date.month, day: date.day) == days)
        }
        #expect(CivilDate.date(daysSinceEpoch: 0) == (1970, 1, 1))
        #expect(CivilDate.date(daysSinceEpoch: -1) == (1969, 12, 31))
        #expect(CivilDate.date(daysSinceEpoch: 11_016) == (2000, 2, 29))
        #expect(CivilDate.daysSinceEpoch(year: 2026, month: 11, day: 29) == 20_786)
    }

    @Test func rfc3339InstantsAreRead() {
        #expect(RFC3339.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(RFC3339.milliseconds("2000-02-29T00:00:00.5+00:00") == 951_782_400_500)
        #expect(RFC3339.milliseconds("2000-02-29T01:00:00+01:00") == 951_782_400_000)
        #expect(RFC3339.milliseconds("2000-02-29") == nil)
        #expect(RFC3339.milliseconds("2000-13-01T00:00:00Z") == nil)
    }

    @Test func rfc3339InstantsAreWrittenInUTCWithMilliseconds() {
        #expect(RFC3339.string(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.string(milliseconds: 951_782_400_500) == "2000-02-29T00:00:00.500Z")
        #expect(RFC3339.string(milliseconds: 1_700_000_000_007) == "2023-11-14T22:13:20.007Z")
        #expect(RFC3339.string(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(RFC3339.string(milliseconds: -62_167_219_200_000) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.string(milliseconds: 253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.string(milliseconds: 253_402_300_800_000) == "10000-01-01T00:00:00.000Z")
        // Every Int64 is written, none traps.
        #expect(RFC3339.string(milliseconds: .max).hasSuffix(".807Z"))
        #expect(RFC3339.string(milliseconds: .min).hasSuffix(".192Z"))
        for millis in stride(from: Int64(-5_000_000_000_000), through: 5_000_000_000_000, by: 7_777_777_777) {
            #expect(RFC3339.milliseconds(RFC3339.string(milliseconds: millis)) == millis)
        }
    }
}
