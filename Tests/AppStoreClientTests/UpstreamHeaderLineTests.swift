import Testing

@testable import AppStoreClient

@Suite struct UpstreamHeaderLineTests {
    private func line(_ bytes: [UInt8]) -> UpstreamHeaderLine {
        bytes.withUnsafeBytes { UpstreamHeaderLine($0) }
    }

    private func line(_ text: String) -> UpstreamHeaderLine { line(Array(text.utf8)) }

    @Test func fieldsHaveLowercaseNamesAndValuesWithoutSurroundingBlanks() {
        #expect(line("Retry-After: 5\r\n") == .field(name: "retry-after", value: "5"))
        #expect(
            line("x-apple-request-uuid:\t abc-123 \t\r\n") == .field(name: "x-apple-request-uuid", value: "abc-123"))
        #expect(
            line("content-type: application/json; charset=utf-8\r\n")
                == .field(name: "content-type", value: "application/json; charset=utf-8"))
        // Only the first colon splits: a value may hold more.
        #expect(
            line("location: https://example.com:443/a\r\n")
                == .field(name: "location", value: "https://example.com:443/a"))
    }

    @Test func emptyAndBlankValuesAreEmpty() {
        #expect(line("x-empty:\r\n") == .field(name: "x-empty", value: ""))
        #expect(line("x-blank:   \t \r\n") == .field(name: "x-blank", value: ""))
        #expect(line(":") == .field(name: "", value: ""))
    }

    @Test func statusLinesAndOtherLinesAreTold() {
        #expect(line("HTTP/2 200 \r\n") == .status)
        #expect(line("HTTP/1.1 100 Continue\r\n") == .status)
        #expect(line("\r\n") == .other)
        #expect(line("no colon here") == .other)
        #expect(line([]) == .other)
    }

    /// The peer's bytes, whatever they are: invalid UTF-8 is replaced, not trusted, and nothing traps.
    @Test func bytesThatAreNotUTF8AreReplaced() {
        #expect(line([0x58, 0xFF, 0x3A, 0x20, 0xC3, 0x28]) == .field(name: "x\u{FFFD}", value: "\u{FFFD}("))
        for length in 0..<64 {
            var random = SystemRandomNumberGenerator()
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = line(bytes)
        }
    }
}
