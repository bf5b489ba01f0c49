import GatewayFoundation

/// Parses the `Retry-After` header of an Apple 429 into the wall time of the next allowed request.
///
/// Apple documents a UNIX time in milliseconds, which is not what RFC 9110 §10.2.3 defines
/// (delta-seconds or an HTTP-date), so all forms are accepted:
/// - 13+ digits (≥ 10^12): UNIX milliseconds (Apple's form);
/// - 10–12 digits (10^9 ..< 10^12): UNIX seconds, since a delay of 31+ years is not plausible;
/// - fewer digits: delta-seconds from `now`;
/// - an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 §5.6.7).
/// Anything else (signs, fractions, overflow, other date formats) is nil. A time in the past is
/// returned as is; `delay(until:from:)` turns it into zero.
package enum RetryAfter {
    /// The wall time named by `headerValue`, relative to `now` for delta-seconds; nil when unparsable.
    package static func parse(_ headerValue: String, now: WallTime) -> WallTime? {
        let value = headerValue.trimmingHTTPWhitespace()
        guard !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let number = Int64(value) else { return nil }  // overflow
            switch number {
            case 1_000_000_000_000...:
                return WallTime(millisecondsSince1970: number)
            case 1_000_000_000...:
                return WallTime(millisecondsSince1970: number * 1000)
            default:
                return now + .seconds(number)
            }
        }
        return parseIMFFixdate(value)
    }

    /// Longest wait taken from a `Retry-After` (1 h, the period over which Apple enforces its limits),
    /// so a garbled header cannot stall an endpoint indefinitely.
    package static let maximumDelay = Duration.seconds(3600)

    /// How long to wait from `now` until `time`: zero for times already past, at most `cap`.
    package static func delay(until time: WallTime, from now: WallTime, cap: Duration = maximumDelay) -> Duration {
        time > now ? min(time - now, cap) : .zero
    }

    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`: fixed length 29, fixed positions.
    static func parseIMFFixdate(_ value: String) -> WallTime? {
        let bytes = Array(value.utf8)
        guard bytes.count == 29 else { return nil }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        func number(_ range: Range<Int>) -> Int64? {
            guard bytes[range].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int64(text(range))
        }
        guard let weekday = dayNames.firstIndex(of: text(0..<3)),
            text(3..<5) == ", ", bytes[7] == 0x20, bytes[11] == 0x20, bytes[16] == 0x20,
            bytes[19] == 0x3A, bytes[22] == 0x3A, text(25..<29) == " GMT",
            let day = number(5..<7), let monthIndex = monthNames.firstIndex(of: text(8..<11)),
            let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
            let second = number(23..<25)
        else { return nil }
        let month = Int64(monthIndex + 1)
        guard day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 61 else {
            return nil
        }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        // 1970-01-01 was a Thursday (index 3); a wrong day name means a garbled date.
        guard Int((days % 7 + 7 + 3) % 7) == weekday else { return nil }
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)
        return WallTime(millisecondsSince1970: seconds * 1000)
    }

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace, RFC 9110 §5.6.3).
    func trimmingHTTPWhitespace() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}
