/// JSON string literals (RFC 8259 §7), the one escaper every module uses: quote, backslash and the C0
/// controls are escaped (`\b \f \n \r \t` in their short forms, the rest as `\u00XX`); everything else,
/// non-ASCII included, is written as UTF-8.
public enum JSONString {
    /// Appends `text` as a JSON string literal, quotes included.
    public static func append(_ text: String, to output: inout String) {
        output += "\""
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

    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String {
        var output = ""
        append(text, to: &output)
        return output
    }
}

/// Minimal JSON text writing for the few bodies the gateway builds by hand with a fixed key order.
enum JSONText {
    /// `value` as a JSON string literal.
    static func quoted(_ value: String) -> String { JSONString.quoted(value) }

    /// An object from already-encoded values, in the given order.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
