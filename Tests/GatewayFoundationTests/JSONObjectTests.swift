import GatewayFoundation
import Testing

@Suite struct JSONObjectTests {
    private func parsed(_ text: String) -> JSONObject? { JSONObject(parsing: Array(text.utf8)) }

    @Test func readsEveryKindOfField() throws {
        let object = try #require(
            parsed(
                #"{"s":"x","b":true,"i":1700000000000,"e":1.7e12,"a":["p","q"],"o":[{"k":1},{}],"n":null}"#))
        #expect(try object.string("s") == "x")
        #expect(try object.bool("b") == true)
        #expect(try object.int64("i") == 1_700_000_000_000)
        #expect(try object.int64("e") == 1_700_000_000_000)
        #expect(try object.strings("a") == ["p", "q"])
        let nested = try #require(try object.objects("o"))
        #expect(nested.count == 2)
        #expect(try nested[0].int64("k") == 1)
        #expect(try nested[1].int64("k") == nil)
    }

    @Test func absentAndNullFieldsAreNil() throws {
        let object = try #require(parsed(#"{"n":null}"#))
        #expect(try object.string("n") == nil)
        #expect(try object.bool("missing") == nil)
        #expect(try object.int64("n") == nil)
        #expect(try object.strings("n") == nil)
        #expect(try object.objects("missing") == nil)
    }

    @Test func aFieldOfAnotherTypeIsAMismatchNamingIt() throws {
        let object = try #require(
            parsed(#"{"s":1,"b":"true","i":1.5,"big":1e300,"a":["p",2],"o":[{},"x"],"t":{"a":1}}"#))
        #expect(throws: JSONFieldMismatch(key: "s")) { try object.string("s") }
        #expect(throws: JSONFieldMismatch(key: "b")) { try object.bool("b") }
        #expect(throws: JSONFieldMismatch(key: "i")) { try object.int64("i") }
        #expect(throws: JSONFieldMismatch(key: "big")) { try object.int64("big") }
        #expect(throws: JSONFieldMismatch(key: "a")) { try object.strings("a") }
        #expect(throws: JSONFieldMismatch(key: "o")) { try object.objects("o") }
        #expect(throws: JSONFieldMismatch(key: "t")) { try object.strings("t") }
        #expect(throws: JSONFieldMismatch(key: "s")) { try object.objects("s") }
    }

    @Test(arguments: [
        "", "[]", "\"x\"", "1", "null", #"{"a":"#, #"{"a":"x"#, #"{"a":1"#, #"{"a":[1,2}"#, #"{"a":1}}"#,
        #"{"a":1,}"#, "{\"a\":\"\u{0}\"}",
    ])
    func whatIsNotOneObjectIsRefused(text: String) {
        #expect(parsed(text) == nil, "\(text)")
    }

    @Test func hostileShapesAreRefusedWithoutTrapping() {
        // Nesting past the parser's limit (64), and far past it, in objects and arrays.
        for depth in [65, 10_000] {
            let deepArrays =
                #"{"a":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
            #expect(parsed(deepArrays) == nil)
            let deepObjects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            #expect(parsed(deepObjects) == nil)
        }
        // Invalid UTF-8 inside a string, a lone surrogate escape, an integer past Int64 (kept as a double).
        #expect(JSONObject(parsing: [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) == nil)
        #expect(parsed(#"{"a":"\ud800"}"#) == nil)
        let huge = parsed(#"{"a":99999999999999999999999}"#)
        #expect(throws: JSONFieldMismatch(key: "a")) { try huge?.int64("a") }
        // Every truncation of a valid answer is refused, none traps.
        let answer = #"{"revision":"r","hasMore":false,"signedTransactions":["a.b.c","d.e.f"],"appAppleId":1}"#
        let bytes = Array(answer.utf8)
        for length in 0..<bytes.count { #expect(JSONObject(parsing: Array(bytes[..<length])) == nil) }
        #expect(JSONObject(parsing: bytes) != nil)
    }

    @Test func aLargeAnswerParsesWhole() throws {
        // The size of a full history page: 20 JWS of about 5 KB each.
        let jws = String(repeating: "eyJhbGciOiJFUzI1NiJ9", count: 250)
        let text = #"{"signedTransactions":["# + Array(repeating: "\"\(jws)\"", count: 20).joined(separator: ",") + "]}"
        let object = try #require(parsed(text))
        #expect(try object.strings("signedTransactions") == Array(repeating: jws, count: 20))
    }
}
