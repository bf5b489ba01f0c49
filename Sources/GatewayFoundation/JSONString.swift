/// JSON string literals (RFC 8259 §7), the one escaper every module uses: quote, backslash and the C0
/// controls are escaped (`\b \f \n \r \t` in their short forms, the rest as `\u00XX`); everything else,
/// non-ASCII included, is written as UTF-8.
public enum JSONString {
    /// Appends `text` as a JSON string literal, quotes included.
    public static func append(_ text: String, to output: inout String) {
        output += "\""
        // The usual case: nothing to escape, one append.
        if !text.utf8.contains(where: needsEscaping) {
            output += text
            output += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: false)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// A control character, a quote or a backslash: a byte a JSON string cannot hold as it is.
    private static func needsEscaping(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    /// Appends `text` as a JSON string literal, quotes included, as UTF-8 bytes (the same rules, for
    /// writers that build lines as bytes).
    public static func append(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        let plain = text.withUTF8 { bytes in
            // The usual case: nothing to escape, one copy of contiguous bytes.
            guard !bytes.contains(where: needsEscaping) else { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if plain {
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                output.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigit(byte >> 4), hexDigit(byte & 15),
                ])
            default:
                output.append(byte)  // UTF-8 of every other scalar, as the String form writes it
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? 0x30 + value : 0x61 + value - 10
    }

    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String {
        var output = ""
        append(text, to: &output)
        return output
    }
}

/// Minimal JSON text writing for the few bodies the gateway builds by hand with a fixed key order.
public enum JSONText {
    /// `value` as a JSON string literal.
    public static func quoted(_ value: String) -> String { JSONString.quoted(value) }

    /// An object from already-encoded values, in the given order.
    public static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
