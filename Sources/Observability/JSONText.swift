import GatewayFoundation

/// JSON text building blocks (RFC 8259) for the log handler: numbers and timestamps (strings: `JSONString`).
enum JSONText {
    /// The JSON number for an integer or a finite floating-point value; nil for anything else.
    static func number(_ value: any CustomStringConvertible & Sendable) -> String? {
        switch value {
        // The concrete types the code logs first: a cast to one is cheap, to an existential is not.
        case let integer as Int: return String(integer)
        case let integer as Int64: return String(integer)
        case let integer as UInt64: return String(integer)
        case let integer as Int32: return String(integer)
        case let integer as any BinaryInteger: return "\(integer)"
        case let double as Double: return double.isFinite ? "\(double)" : nil
        case let float as Float: return float.isFinite ? "\(float)" : nil
        default: return nil
        }
    }

    /// Appends the JSON number for an integer or a finite floating-point value and returns true; false
    /// (nothing appended) for anything else. An `Int`, the usual count or status, is written digit by digit.
    static func appendNumber(_ value: any CustomStringConvertible & Sendable, to out: inout [UInt8]) -> Bool {
        if let integer = value as? Int {
            appendInteger(integer, to: &out)
            return true
        }
        guard let number = number(value) else { return false }
        out.append(contentsOf: number.utf8)
        return true
    }

    /// A decimal integer, digit by digit (no String).
    static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of any Int
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[index...])
        }
    }

    /// RFC 3339 in UTC with milliseconds: `2026-11-22T05:54:27.123Z`.
    static func timestamp(_ time: WallTime) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        appendTimestamp(time, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the RFC 3339 form of `time` (as `timestamp`) as ASCII bytes, for lines built as bytes.
    static func appendTimestamp(_ time: WallTime, to out: inout [UInt8]) {
        let millis = time.millisecondsSince1970
        let seconds = millis.floorDivided(by: 1000)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = CivilDate.date(daysSinceEpoch: days)
        let fourDigitYear = (0...9999).contains(year)
        // `YYYY-MM-DDTHH:MM:SS.mmmZ` written on the stack and appended at once; a year outside RFC 3339's
        // range is written as it is in front of the rest.
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { buffer in
            /// `value` (0 or more) in exactly `width` digits ending before `end`.
            func digits(_ value: Int, _ width: Int, endingAt end: Int) {
                var value = value
                var index = end
                while index > end - width {
                    index -= 1
                    buffer[index] = 0x30 + UInt8(value % 10)
                    value /= 10
                }
            }
            if fourDigitYear { digits(Int(year), 4, endingAt: 4) }
            buffer[4] = UInt8(ascii: "-")
            digits(Int(month), 2, endingAt: 7)
            buffer[7] = UInt8(ascii: "-")
            digits(Int(day), 2, endingAt: 10)
            buffer[10] = UInt8(ascii: "T")
            digits(secondOfDay / 3600, 2, endingAt: 13)
            buffer[13] = UInt8(ascii: ":")
            digits(secondOfDay / 60 % 60, 2, endingAt: 16)
            buffer[16] = UInt8(ascii: ":")
            digits(secondOfDay % 60, 2, endingAt: 19)
            buffer[19] = UInt8(ascii: ".")
            digits(Int(millis - seconds * 1000), 3, endingAt: 23)
            buffer[23] = UInt8(ascii: "Z")
            if !fourDigitYear { out.append(contentsOf: String(year).utf8) }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(fourDigitYear ? 0 : 4)..<24]))
        }
    }
}
