/// The proleptic Gregorian calendar in UTC, as Howard Hinnant's `days_from_civil` / `civil_from_days` compute it
/// (eras of 400 years, exact for any `Int64` day a date can name): the one calendar of the project's text dates
/// (HTTP dates, log timestamps, RFC 3339 instants). ProtoCodec, which may know no project module, keeps its own.
public enum CivilDate {
    /// Days from 1970-01-01 to `year`-`month`-`day`.
    public static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear.floorDivided(by: 400)
        let yearOfEra = shiftedYear - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    public static func date(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// RFC 3339 instants read as UNIX milliseconds (`appstore-gateway events replay --since`) and written in UTC with
/// milliseconds (`appstore-gateway state export`).
public enum RFC3339 {
    /// `millis` (UNIX ms) in UTC with milliseconds: `2026-11-29T05:00:00.000Z`. Defined for every `Int64`; a year
    /// outside 0000–9999 (which RFC 3339 cannot name) is written with as many digits as it has, and its sign.
    public static func string(milliseconds millis: Int64) -> String {
        let remainder = millis % 1000
        let fraction = remainder < 0 ? remainder + 1000 : remainder
        let seconds = millis / 1000 - (remainder < 0 ? 1 : 0)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(daysSinceEpoch: days)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
        }
        let yearText = (0...9999).contains(year) ? padded(year, 4) : String(year)
        return yearText + "-" + padded(month, 2) + "-" + padded(day, 2) + "T" + padded(secondOfDay / 3600, 2) + ":"
            + padded(secondOfDay / 60 % 60, 2) + ":" + padded(secondOfDay % 60, 2) + "." + padded(fraction, 3) + "Z"
    }

    /// Milliseconds since the UNIX epoch of an RFC 3339 instant (`2026-11-29T05:00:00Z`,
    /// `2026-11-29T06:00:00.5+01:00`, `t`/`z` accepted); nil when it is not one.
    public static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[from..<(from + count)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[10]),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                if digits < 3 { millis = millis * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return seconds * 1000 + millis
    }
}
