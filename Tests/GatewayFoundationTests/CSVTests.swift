import GatewayFoundation
import Testing

/// RFC 4180 records, formula injection neutralized, any Unicode kept byte for byte.
@Suite struct CSVTests {
    @Test func plainFieldsAreWrittenAsTheyAre() {
        #expect(
            CSV.record(["a", "b c", "1.5", "2026-01-02T03:04:05.000Z"]) == "a,b c,1.5,2026-01-02T03:04:05.000Z\r\n")
        #expect(CSV.field("") == "")
        #expect(CSV.record(["", "", ""]) == ",,\r\n")
        #expect(CSV.record([String]()) == "\r\n")
    }

    @Test func separatorsQuotesAndLineBreaksAreQuoted() {
        #expect(CSV.field("a,b") == #""a,b""#)
        #expect(CSV.field(#"say "hi""#) == #""say ""hi""""#)
        #expect(CSV.field("\"") == "\"\"\"\"")
        #expect(CSV.field("line\nbreak") == "\"line\nbreak\"")
        #expect(CSV.field("cr\rinside") == "\"cr\rinside\"")
        // "\r\n" is one Character: found as bytes all the same.
        #expect(CSV.field("a\r\nb") == "\"a\r\nb\"")
        // A quote followed by a combining mark is one Character too; its quote is still doubled.
        #expect(CSV.field("x\"\u{301}y") == "\"x\"\"\u{301}y\"")
        #expect(CSV.record(["a,b", "c"]) == "\"a,b\",c\r\n")
    }

    @Test func aFieldThatWouldStartAFormulaGetsALeadingQuote() {
        #expect(CSV.field("=1+1") == "'=1+1")
        #expect(CSV.field("+1") == "'+1")
        #expect(CSV.field("-1") == "'-1")
        #expect(CSV.field("@SUM(A1)") == "'@SUM(A1)")
        #expect(CSV.field("\tx") == "'\tx")
        #expect(CSV.field("\rx") == "\"'\rx\"")
        #expect(CSV.field(#"=HYPERLINK("http://x","y")"#) == #""'=HYPERLINK(""http://x"",""y"")""#)
        // Only the first byte counts; "=" with a combining mark is still "=" first.
        #expect(CSV.field("=\u{301}") == "'=\u{301}")
        #expect(CSV.field("a=1") == "a=1")
        #expect(CSV.field(" =1") == " =1")
        #expect(CSV.field("'") == "'")
    }

    @Test func unicodeIsKeptByteForByte() {
        for text in ["é", "e\u{301}", "✓ 日本語", "🇫🇷👨‍👩‍👧", "\u{0}", "\u{FEFF}x"] {
            #expect(Array(CSV.field(text).utf8) == Array(text.utf8))
        }
        #expect(CSV.field("é,✓") == "\"é,✓\"")
    }

    @Test func anyFieldsReadBackAsWrittenByAnRFC4180Reader() {
        var random = SplitMix64(seed: 4180)
        let alphabet: [String] = [
            "a", "Z", "0", ",", "\"", "\r", "\n", "\r\n", "=", "+", "-", "@", "\t", " ", "'",
            "é", "e\u{301}", "✓", "🙂", ";",
        ]
        for _ in 0..<2000 {
            let fields = (0..<Int(random.next() % 5 + 1)).map { _ in
                (0..<Int(random.next() % 8)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
            }
            let read = Self.read(CSV.record(fields))
            let expected = fields.map { field in
                guard let first = field.utf8.first, "=+-@\t\r".utf8.contains(first) else { return field }
                return "'" + field
            }
            #expect(read == [expected], "\(fields)")
        }
    }

    /// A strict RFC 4180 reader of bytes (CRLF record ends; quoted fields may hold anything).
    static func read(_ text: String) -> [[String]] {
        let bytes = Array(text.utf8)
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var index = 0
        var quoted = false
        while index < bytes.count {
            let byte = bytes[index]
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\"") {
                        field.append(byte)
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == UInt8(ascii: "\"") && field.isEmpty {
                quoted = true
            } else if byte == UInt8(ascii: ",") {
                record.append(String(decoding: field, as: UTF8.self))
                field = []
            } else if byte == UInt8(ascii: "\r"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") {
                record.append(String(decoding: field, as: UTF8.self))
                records.append(record)
                record = []
                field = []
                index += 1
            } else {
                field.append(byte)
            }
            index += 1
        }
        return records
    }
}
