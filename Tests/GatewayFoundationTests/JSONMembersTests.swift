import Foundation
import GatewayFoundation
import Testing

@Suite struct JSONMembersTests {
    private func members(_ text: String) -> JSONMembers? {
        Array(text.utf8).withUnsafeBufferPointer { JSONParser.parseMembers($0) }
    }

    private func object(_ text: String) -> [String: JSONValue]? {
        var parser = JSONParser(bytes: Array(text.utf8))
        guard case .object(let object)? = parser.parseDocument() else { return nil }
        return object
    }

    @Test func readsAPayloadLikeTheDictionaryParse() throws {
        let text = #"""
            {"transactionId":"2000000912345678","originalTransactionId":"2000000912345678","bundleId":"com.example",
             "purchaseDate":1759302518835,"quantity":1,"type":"Auto-Renewable Subscription","isUpgraded":false,
             "price":4990,"commitmentInfo":{"billingPeriodNumber":2},"eligibleWinBackOfferIds":["a","b"],"x":null,
             "subscriptionGroupIdentifier":"21000000","offerDiscountType":"FREE_TRIAL","ratio":0.5}
            """#
        let parsed = try #require(members(text))
        let reference = try #require(object(text))
        #expect(parsed.count == reference.count)
        #expect(parsed.dictionary == reference)
        for (key, value) in reference { #expect(parsed[key] == value, "\(key)") }
        #expect(parsed["transactionid"] == nil)
        #expect(parsed["bundleI"] == nil)
        #expect(parsed[""] == nil)
        #expect(parsed["x"] == .null)
    }

    @Test func aDuplicateKeyKeepsTheLastValue() throws {
        let parsed = try #require(members(#"{"a":1,"b":2,"a":3}"#))
        #expect(parsed.count == 2)
        #expect(parsed["a"] == .integer(3))
        #expect(parsed.dictionary == ["a": .integer(3), "b": .integer(2)])
    }

    @Test func escapedKeysAreFoundByTheirDecodedBytes() throws {
        let parsed = try #require(members(#"{"bundle\u0049d":"x","caf\u00e9":1,"":2,"q\"":3}"#))
        #expect(parsed["bundleId"] == .string("x"))
        #expect(parsed["café"] == .integer(1))
        #expect(parsed[""] == .integer(2))
        #expect(parsed["q\""] == .integer(3))
    }

    /// Keys match by bytes: U+212A KELVIN SIGN is canonically equivalent to "K" for Swift's String, not here.
    @Test func keysAreComparedAsBytesNotByUnicodeEquivalence() throws {
        let parsed = try #require(members("{\"\u{212A}ey\":1}"))
        #expect(parsed["Key"] == nil)
        #expect(parsed["\u{212A}ey"] == .integer(1))
    }

    @Test(arguments: [
        "", "[]", "1", "\"a\"", "{", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1} x", "{\"a\":}", "{1:2}", "{\"\\x\":1}",
        "{\"\\ud800\":1}", "{\"a\u{01}\":1}", "{\"a\":1 \"b\":2}",
    ])
    func rejectsWhatIsNotOneObject(text: String) {
        #expect(members(text) == nil, "\(text)")
    }

    /// The top-level object counts as one level of the parser's 64, as it does for `parseDocument`.
    @Test func nestingIsLimitedAsForTheDictionaryParse() {
        func nested(_ depth: Int) -> String {
            String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
        }
        #expect(members(nested(64)) != nil)
        #expect(object(nested(64)) != nil)
        #expect(members(nested(65)) == nil)
        #expect(object(nested(65)) == nil)
    }

    @Test func invalidUTF8InAKeyIsRejected() {
        let bytes: [UInt8] = Array(#"{"a"#.utf8) + [0xC3, 0x28] + Array(#"":1}"#.utf8)
        #expect(bytes.withUnsafeBufferPointer { JSONParser.parseMembers($0) } == nil)
    }

    @Test func manyMembersAreAllFound() throws {
        let keys = (0..<500).map { "key\($0)-\(String(repeating: "x", count: $0 % 40))" }
        let text = "{" + keys.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}"
        let parsed = try #require(members(text))
        #expect(parsed.count == keys.count)
        for (index, key) in keys.enumerated() { #expect(parsed[key] == .integer(Int64(index))) }
        #expect(parsed["key500-"] == nil)
        #expect(try #require(members("{}")).count == 0)
    }

    /// Differential: random objects and byte-level mutations of them are accepted exactly when the
    /// dictionary parse sees one object, with the same members.
    @Test func agreesWithTheDictionaryParseOnMutatedInput() {
        var random = SeededLCG(seed: 0x5EED)
        let pieces = [
            #""a""#, #""bundleId""#, #""k\u00e9""#, #""\"""#, "1", "-2.5e3", "true", "null", #"[1,"x"]"#, #"{"n":{}}"#,
            #""long value with spaces""#,
        ]
        for _ in 0..<3000 {
            var text = "{"
            for index in 0..<Int(random.next() % 8) {
                if index > 0 { text += "," }
                text += pieces[Int(random.next() % 4)] + ":" + pieces[Int(random.next() % UInt64(pieces.count))]
            }
            text += "}"
            var bytes = Array(text.utf8)
            for _ in 0..<Int(random.next() % 3) where !bytes.isEmpty {
                let position = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert(Array(#"{}[]":,"\ "#.utf8)[Int(random.next() % 10)], at: position)
                }
            }
            var parser = JSONParser(bytes: bytes)
            let reference: [String: JSONValue]? =
                if case .object(let object)? = parser.parseDocument() { object } else { nil }
            let parsed = bytes.withUnsafeBufferPointer { JSONParser.parseMembers($0) }
            #expect(parsed?.dictionary == reference, "\(String(decoding: bytes, as: UTF8.self))")
            // Lookups go through the hash table, which `.dictionary` does not.
            for (key, value) in reference ?? [:] { #expect(parsed?[key] == value, "\(key)") }
        }
    }
}

/// A small deterministic generator (Knuth's MMIX LCG, high bits), so a failing input can be replayed.
private struct SeededLCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 17
    }
}
