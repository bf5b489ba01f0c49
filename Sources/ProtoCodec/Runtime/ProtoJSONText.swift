/// The text forms of ProtoJSON's values: escaped strings, base64, Python's float repr, RFC 3339 timestamps and
/// durations. Pure functions of their input; no Foundation.
enum ProtoJSONText {
    // MARK: Strings

    /// `string` quoted, escaped as Python's `json.dumps(ensure_ascii=False)` does: `"` and `\`, the control
    /// characters below U+0020 (`\b \f \n \r \t`, the others `\u00xx` in lower-case hex); all else as UTF-8.
    static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    // MARK: Base64

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard base64 (RFC 4648 section 4) with `=` padding, unquoted.
    static func appendBase64(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = UInt32(bytes[index])
            let b1 = remaining > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = remaining > 2 ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            out.append(base64Alphabet[Int(group >> 18 & 63)])
            out.append(base64Alphabet[Int(group >> 12 & 63)])
            out.append(remaining > 1 ? base64Alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            out.append(remaining > 2 ? base64Alphabet[Int(group & 63)] : UInt8(ascii: "="))
            index += 3
        }
    }

    // MARK: Floating point

    /// A double as `json_format` prints it: `"NaN"`, `"Infinity"`, `"-Infinity"` as strings, else Python's `repr`
    /// of it (the shortest digits that round-trip, which Swift's `description` holds too: only the layout differs).
    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        guard !appendNonFinite(value, to: &out) else { return }
        let (digits, decimalPoint) = shortestDigits(of: value.magnitude)
        appendRepr(negative: value.sign == .minus, digits: digits, decimalPoint: decimalPoint, to: &out)
    }

    /// A float as `json_format` prints it: `ToShortestFloat` (the value rounded to 6, 7, 8 … significant digits,
    /// the first that reads back as the same float through a double) printed with Python's `repr`.
    static func appendFloat(_ value: Float, to out: inout [UInt8]) {
        guard !appendNonFinite(value, to: &out) else { return }
        var digits: [UInt8] = []
        var decimalPoint = 0
        if value != 0 {
            let exact = exactDigits(of: value.magnitude)
            for precision in 6...17 {
                (digits, decimalPoint) = rounded(exact, precision: precision)
                let text = String(decoding: digits, as: UTF8.self) + "e" + String(decimalPoint - digits.count)
                if let double = Double(text), Float(double) == value.magnitude { break }
            }
        }
        appendRepr(negative: value.sign == .minus, digits: digits, decimalPoint: decimalPoint, to: &out)
    }

    private static func appendNonFinite(_ value: some BinaryFloatingPoint, to out: inout [UInt8]) -> Bool {
        if value.isNaN {
            out.append(contentsOf: #""NaN""#.utf8)
        } else if value.isInfinite {
            out.append(contentsOf: (value < 0 ? #""-Infinity""# : #""Infinity""#).utf8)
        } else {
            return false
        }
        return true
    }

    /// The significant digits (no leading or trailing zeros) of a finite, non-negative double's `description`,
    /// and where the decimal point goes: value = 0.d1d2d3… × 10^decimalPoint. No digits for zero.
    private static func shortestDigits(of value: Double) -> (digits: [UInt8], decimalPoint: Int) {
        let text = Array(value.description.utf8)  // "123.45", "1e-05", "5e-324", "1.5e+16"
        var digits: [UInt8] = []
        var integerDigits = 0
        var seenPoint = false
        var exponent = 0
        for (index, byte) in text.enumerated() {
            if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                exponent = Int(String(decoding: text[(index + 1)...], as: UTF8.self)) ?? 0
                break
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                digits.append(byte)
                if !seenPoint { integerDigits += 1 }
            }
        }
        let leadingZeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
        digits.removeFirst(leadingZeros)
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return (digits, integerDigits + exponent - leadingZeros)
    }

    /// Every decimal digit of a finite, positive float (at most 112 of them for the smallest subnormal), and
    /// where the decimal point goes: value = 0.d1d2d3… × 10^decimalPoint.
    private static func exactDigits(of value: Float) -> (digits: [UInt8], decimalPoint: Int) {
        let bits = value.bitPattern
        let biasedExponent = Int(bits >> 23 & 0xFF)
        let fraction = bits & 0x7F_FFFF
        // value = significand × 2^exponent, exactly.
        let significand = biasedExponent == 0 ? fraction : fraction | 0x80_0000
        let exponent = biasedExponent == 0 ? -149 : biasedExponent - 150
        // The integer significand × 2^exponent, or significand × 5^-exponent (= value × 10^-exponent), in base
        // 10^9 limbs, least significant first.
        var limbs: [UInt64] = [UInt64(significand)]
        for _ in 0..<abs(exponent) {
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = limbs[index] * (exponent > 0 ? 2 : 5) + carry
                limbs[index] = product % 1_000_000_000
                carry = product / 1_000_000_000
            }
            if carry > 0 { limbs.append(carry) }
        }
        var digits = Array(String(limbs[limbs.count - 1]).utf8)
        for limb in limbs.dropLast().reversed() {
            let text = Array(String(limb).utf8)
            digits += repeatElement(UInt8(ascii: "0"), count: 9 - text.count)
            digits += text
        }
        return (digits, digits.count + min(exponent, 0))
    }

    /// `exact` rounded to `precision` significant digits, half to even (as C's and Python's `%.*g` round),
    /// without trailing zeros.
    private static func rounded(
        _ exact: (digits: [UInt8], decimalPoint: Int), precision: Int
    ) -> (digits: [UInt8], decimalPoint: Int) {
        var digits = Array(exact.digits.prefix(precision))
        var decimalPoint = exact.decimalPoint
        if exact.digits.count > precision {
            let next = exact.digits[precision]
            let restIsZero = exact.digits[(precision + 1)...].allSatisfy { $0 == UInt8(ascii: "0") }
            let lastIsOdd = (digits[precision - 1] - UInt8(ascii: "0")) % 2 == 1
            if next > UInt8(ascii: "5") || (next == UInt8(ascii: "5") && (!restIsZero || lastIsOdd)) {
                var index = precision - 1
                while index >= 0 && digits[index] == UInt8(ascii: "9") {
                    digits[index] = UInt8(ascii: "0")
                    index -= 1
                }
                if index >= 0 {
                    digits[index] += 1
                } else {
                    digits.insert(UInt8(ascii: "1"), at: 0)
                    decimalPoint += 1
                }
            }
        }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return (digits, decimalPoint)
    }

    /// Python's `float.__repr__` layout of 0.digits × 10^decimalPoint: positional for 1e-4 <= |x| < 1e16 with at
    /// least one fractional digit (`1.0`, `0.0001`), else `d.ddde±XX` (`1e-05`, `1.5e+16`); `0.0` for no digits.
    private static func appendRepr(negative: Bool, digits: [UInt8], decimalPoint: Int, to out: inout [UInt8]) {
        if negative { out.append(UInt8(ascii: "-")) }
        if digits.isEmpty {
            out.append(contentsOf: "0.0".utf8)
        } else if decimalPoint <= -4 || decimalPoint > 16 {
            out.append(digits[0])
            if digits.count > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[1...])
            }
            let power = decimalPoint - 1
            out.append(contentsOf: (power < 0 ? "e-" : "e+").utf8)
            if abs(power) < 10 { out.append(UInt8(ascii: "0")) }
            out.append(contentsOf: String(abs(power)).utf8)
        } else if decimalPoint <= 0 {
            out.append(contentsOf: "0.".utf8)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -decimalPoint))
            out.append(contentsOf: digits)
        } else if decimalPoint >= digits.count {
            out.append(contentsOf: digits)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: decimalPoint - digits.count))
            out.append(contentsOf: ".0".utf8)
        } else {
            out.append(contentsOf: digits[..<decimalPoint])
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: digits[decimalPoint...])
        }
    }

    // MARK: Timestamp and Duration

    /// The first and last second a Timestamp may hold: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    static let timestampSeconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799
    /// The longest Duration: about 10,000 years either way.
    static let durationSeconds: ClosedRange<Int64> = -315_576_000_000...315_576_000_000

    /// RFC 3339 in UTC, `2026-11-29T05:00:00Z` with 0, 3, 6 or 9 fractional digits (the fewest that are
    /// exact); nil for a Timestamp outside the range proto3 JSON allows.
    static func timestamp(seconds: Int64, nanos: Int32) -> String? {
        guard timestampSeconds.contains(seconds), (0..<1_000_000_000).contains(nanos) else { return nil }
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        var text = padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
        text += "T" + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2) + ":"
        text += padded(secondOfDay % 60, 2) + fraction(nanos) + "Z"
        return text
    }

    /// `1.500s`, `-0.000001s`, `0s`: the seconds, then 0, 3, 6 or 9 fractional digits; nil for a Duration out of
    /// range or whose seconds and nanos have different signs.
    static func duration(seconds: Int64, nanos: Int32) -> String? {
        guard durationSeconds.contains(seconds), nanos > -1_000_000_000, nanos < 1_000_000_000,
            !(seconds < 0 && nanos > 0), !(seconds > 0 && nanos < 0)
        else { return nil }
        let sign = seconds < 0 || nanos < 0 ? "-" : ""
        return sign + String(seconds.magnitude) + fraction(Int32(nanos.magnitude)) + "s"
    }

    /// `""`, `.123`, `.123456` or `.123456789` for `nanos` in 0..<1e9.
    private static func fraction(_ nanos: Int32) -> String {
        if nanos == 0 { return "" }
        if nanos % 1_000_000 == 0 { return "." + padded(Int64(nanos / 1_000_000), 3) }
        if nanos % 1000 == 0 { return "." + padded(Int64(nanos / 1000), 6) }
        return "." + padded(Int64(nanos), 9)
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let (era, dayOfEra) = floorDivision(days + 719_468, 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
