import GatewayFoundation
import Testing

/// The one calendar: days and dates both ways, around the epoch, leap days and far from it; RFC 3339 instants read.
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
}
