import Testing

@testable import HTTPServer

@Suite struct InternTableTests {
    @Test func knownStringsComeWithTheirIndexAndOthersAreMade() {
        let table = InternTable(["/a.B/C", "content-type", "/a.B/C", "application/grpc"])
        func lookup(_ text: String) -> (string: String, index: Int)? {
            Array(text.utf8).withUnsafeBufferPointer { table.lookup($0) }
        }
        #expect(lookup("/a.B/C")?.index == 0)
        #expect(lookup("application/grpc")?.index == 3)
        #expect(lookup("/a.B/D") == nil && lookup("") == nil)
        #expect(Array("x-other".utf8).withUnsafeBufferPointer { table.string($0) } == "x-other")
    }

    /// A responder routes by these indexes: a long method path must be in the table like a short one
    /// (paths over 96 bytes used to be left out, and their method answered UNIMPLEMENTED).
    @Test func everyStringIsInTheTableHoweverLong() {
        let long = "/" + String(repeating: "a.", count: 150) + "Service/Method"
        let table = InternTable([long, "/a.B/C"])
        #expect(Array(long.utf8).withUnsafeBufferPointer { table.lookup($0) }?.index == 0)
        #expect(Array((long + "x").utf8).withUnsafeBufferPointer { table.lookup($0) } == nil)
    }

    @Test func recentStringsAreReusedAndBounded() {
        var recent = RecentStrings()
        func string(_ text: String) -> String { Array(text.utf8).withUnsafeBufferPointer { recent.string($0) } }
        let agent = string("grpc-python/1.66 grpc-c/43.0.0 (linux; chttp2)")
        #expect(string("grpc-python/1.66 grpc-c/43.0.0 (linux; chttp2)") == agent)
        for index in 0..<20 { #expect(string("value-\(index)") == "value-\(index)") }
        #expect(string("") == "")
        // Invalid UTF-8 is decoded with replacement characters, never trusted as is.
        #expect([UInt8]([0xFF, 0x41]).withUnsafeBufferPointer { recent.string($0) } == "\u{FFFD}A")
    }
}
