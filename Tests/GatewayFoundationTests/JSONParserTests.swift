import Foundation
import GatewayFoundation
import Testing

@Suite struct JSONParserTests {
    private func parse(_ text: String) -> JSONValue? {
        var parser = JSONParser(bytes: Array(text.utf8))
        return parser.parseDocument()
    }

    @Test func acceptsStandardJSON() {
        #expect(
            parse(#"{"a":1,"b":[true,false,null],"c":"x\"\u00e9\ud83d\ude00","d":-0.5e2,"e":{}}"#)
                == .object([
                    "a": .integer(1), "b": .array([.bool(true), .bool(false), .null]), "c": .string("x\"é😀"),
                    "d": .number(-50), "e": .object([:]),
                ]))
        #expect(
            parse(" [ 9223372036854775807 , 1759302518835 ] ") == .array([.integer(.max), .integer(1_759_302_518_835)]))
        #expect(parse("9223372036854775808") == .number(9_223_372_036_854_775_808))
    }

    @Test(arguments: [
        "", "{", "{\"a\":1,}", "[1,]", "{'a':1}", "{\"a\" 1}", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul",
        "\"\\x\"", "\"\u{01}\"", "\"\\ud800\"", "\"\\udc00x\"", "{} {}", "[1] x", "NaN", "Infinity", "/* c */ {}",
        String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ])
    func rejectsInvalidJSON(text: String) {
        #expect(parse(text) == nil, "\(text)")
    }

    @Test func integersAreExactAtTheDigitCountBoundaries() {
        #expect(
            parse("[123456789012345678,-999999999999999999,1234567890123456789,-9223372036854775808,-0,0]")
                == .array([
                    .integer(123_456_789_012_345_678), .integer(-999_999_999_999_999_999),
                    .integer(1_234_567_890_123_456_789), .integer(.min), .integer(0), .integer(0),
                ]))
        #expect(parse("-9223372036854775809") == .number(-9.223372036854775808e18))
        #expect(
            parse(#"{"k":"caf\u00e9","ascii":"plain","utf8":"café"}"#)
                == .object(["k": .string("café"), "ascii": .string("plain"), "utf8": .string("café")]))
    }

    /// Long strings go through the 16-byte and 8-byte scans: a quote, backslash, control or non-ASCII byte at
    /// every position of a vector or a word must still be seen, and the bytes around 0x20 kept apart.
    @Test func longStringsAtEveryOffset() {
        for length in 0..<40 {
            let prefix = String(repeating: "a", count: length)
            #expect(parse("[\"\(prefix)\"]") == .array([.string(prefix)]))
            #expect(parse("[\"\(prefix) \u{7F}\(prefix)\"]") == .array([.string(prefix + " \u{7F}" + prefix)]))
            #expect(parse("[\"\(prefix)\\\"\(prefix)\"]") == .array([.string(prefix + "\"" + prefix)]))
            #expect(parse("[\"\(prefix)\\n\(prefix)\"]") == .array([.string(prefix + "\n" + prefix)]))
            #expect(parse("[\"\(prefix)é\(prefix)\"]") == .array([.string(prefix + "é" + prefix)]))
            // A run with a non-ASCII byte is not marked ASCII (which would make a String of the wrong length).
            if case .array(let values) = parse("[\"\(prefix)é\(prefix)\"]"), case .string(let text) = values.first {
                #expect(text.count == 2 * length + 1 && text.unicodeScalars.count == 2 * length + 1)
            }
            #expect(parse("[\"\(prefix)\u{01}\(prefix)\"]") == nil)
            #expect(parse("[\"\(prefix)\u{1F}\(prefix)\"]") == nil)
            #expect(parse("[\"\(prefix)") == nil)
            var invalid = Array("[\"\(prefix)xx\(prefix)\"]".utf8)
            invalid[2 + length] = 0xC3
            invalid[3 + length] = 0x28
            var parser = JSONParser(bytes: invalid)
            #expect(parser.parseDocument() == nil)
        }
    }

    @Test func rejectsInvalidUTF8() {
        var parser = JSONParser(bytes: [0x22, 0xC3, 0x28, 0x22])
        #expect(parser.parseDocument() == nil)
    }
}
