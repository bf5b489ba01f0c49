/// CSV text as RFC 4180 writes it, safe to open in a spreadsheet: for exports whose fields come from outside
/// (every field of an App Store JWS may be crafted by whoever made the purchase or the app).
///
/// - A field holding a comma, a double quote, CR or LF is enclosed in double quotes, and each double quote inside
///   is doubled; any other field is written as it is (UTF-8, no byte-order mark).
/// - Formula injection: a field that starts with `=`, `+`, `-`, `@`, a tab or CR gets a leading `'`, so a
///   spreadsheet shows it as text instead of evaluating it (OWASP's "CSV injection" advice). The `'` is part of the
///   field's value for any other reader.
/// - Records end with CRLF.
///
/// Fields are inspected as UTF-8 bytes, never as `Character`s: `"\r\n"` is one `Character`, and a quote followed
/// by a combining mark is another, either of which a `Character` test would miss.
public enum CSV {
    /// What ends every record: CRLF.
    public static let recordEnd = "\r\n"

    /// One record: each of `fields` as `field(_:)` writes it, separated by commas, ended by CRLF.
    public static func record(_ fields: some Sequence<String>) -> String {
        var line = ""
        var first = true
        for value in fields {
            if !first { line += "," }
            first = false
            line += field(value)
        }
        return line + recordEnd
    }

    /// One field: `value` with a leading `'` when it would start a formula, enclosed in quotes (inner quotes
    /// doubled) when it holds a comma, a quote, CR or LF.
    public static func field(_ value: String) -> String {
        let bytes = value.utf8
        let neutralized = bytes.first.map(startsFormula) ?? false
        let quoted = bytes.contains(where: needsQuotes)
        if !neutralized && !quoted { return value }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 4)
        if quoted { out.append(quote) }
        if neutralized { out.append(UInt8(ascii: "'")) }
        for byte in bytes {
            out.append(byte)
            if quoted && byte == quote { out.append(quote) }
        }
        if quoted { out.append(quote) }
        // Only ASCII was inserted between whole UTF-8 sequences: still valid UTF-8.
        return String(decoding: out, as: UTF8.self)
    }

    private static let quote = UInt8(ascii: "\"")

    private static func needsQuotes(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == quote || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }

    private static func startsFormula(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), UInt8(ascii: "\t"),
            UInt8(ascii: "\r"):
            true
        default: false
        }
    }
}
