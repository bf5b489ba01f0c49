import AppStoreClient
import TestSupport
import Testing

@testable import Redis

/// The reply parser without a socket: replies as large as the limits allow (past the old fixed 64 KiB), and
/// every bound (string length, elements across nested arrays, depth, bytes of one reply) refused as soon as
/// it is crossed, whatever the chunking.
@Suite struct RedisReplyReaderTests {
    private let limits = RedisReplyLimits(largestValue: 200_000, valueBytes: 400_000, elements: 100, depth: 3)

    /// Every reply in `bytes` fed in chunks of `chunk` bytes.
    private func replies(_ bytes: [UInt8], chunk: Int = 1 << 20, limits: RedisReplyLimits? = nil) throws
        -> [RedisReply]
    {
        let reader = try RedisReplyReader(limits: limits ?? self.limits)
        var replies: [RedisReply] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            try bytes[offset..<end].withUnsafeBytes { raw in
                try Result { () throws(RedisConnectionFailure) in try reader.feed(raw) }.get()
            }
            offset = end
            while let reply = try reader.next() { replies.append(reply) }
        }
        #expect(!reader.hasUnreadBytes)
        return replies
    }

    /// The failure message of parsing `bytes`; nil when it parsed.
    private func refusal(_ bytes: [UInt8], chunk: Int = 1 << 20, limits: RedisReplyLimits? = nil) -> String? {
        do {
            _ = try replies(bytes, chunk: chunk, limits: limits)
            return nil
        } catch let failure as RedisConnectionFailure {
            #expect(failure.kind == .protocolError)
            return failure.message
        } catch {
            return "\(error)"
        }
    }

    private func bulk(_ count: Int) -> [UInt8] {
        Array("$\(count)\r\n".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: count) + Array("\r\n".utf8)
    }

    @Test func aStringAsLongAsTheLargestValueIsReadPastTheOld64KiB() throws {
        #expect(try replies(bulk(200_000)) == [.string([UInt8](repeating: UInt8(ascii: "x"), count: 200_000))])
        #expect(try replies(bulk(200_000), chunk: 16_384).count == 1)
    }

    @Test func aLongerStringIsRefused() {
        #expect(refusal(bulk(200_001))?.contains("a string of more than 200000 bytes") == true)
    }

    @Test func anyChunkingGivesTheSameReplies() throws {
        let bytes = Array("*3\r\n:42\r\n$-1\r\n*2\r\n+OK\r\n-ERR wrong\r\n$5\r\nhello\r\n:-7\r\n".utf8)
        let expected: [RedisReply] = [
            .array([.integer(42), .null, .array([.status("OK"), .error("ERR wrong")])]), .string(Array("hello".utf8)),
            .integer(-7),
        ]
        for chunk in 1...bytes.count { #expect(try replies(bytes, chunk: chunk) == expected) }
    }

    @Test func anAnnouncedHugeArrayIsRefusedBeforeAnythingIsAllocated() {
        #expect(refusal(Array("*2147483647\r\n".utf8))?.contains("more than 100 array elements") == true)
        #expect(refusal(Array("*-2\r\n".utf8)) != nil)
    }

    @Test func elementsAreCountedAcrossNestedArrays() throws {
        // 10 arrays of 9: 100 elements in all is the limit; one more element anywhere is refused.
        let inner = "*9\r\n" + String(repeating: ":1\r\n", count: 9)
        let fits = "*10\r\n" + String(repeating: inner, count: 10)
        #expect(try replies(Array(fits.utf8)).count == 1)
        let over = "*10\r\n" + String(repeating: inner, count: 9) + "*10\r\n" + String(repeating: ":1\r\n", count: 10)
        #expect(refusal(Array(over.utf8))?.contains("more than 100 array elements") == true)
        // Each reply has the whole allowance: the count starts again after a reply.
        #expect(try replies(Array((fits + fits).utf8)).count == 2)
    }

    @Test func nestingDeeperThanTheLimitIsRefused() throws {
        #expect(try replies(Array("*1\r\n*1\r\n*1\r\n:1\r\n".utf8)) == [.array([.array([.array([.integer(1)])])])])
        #expect(refusal(Array("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n".utf8))?.contains("nested more than 3 deep") == true)
    }

    @Test func aReplyPastItsBytesFailsBeforeItEnds() throws {
        let small = RedisReplyLimits(largestValue: 100_000, valueBytes: 1_000, elements: 10, depth: 1)
        #expect(small.maxReplyBytes == 1_000 + 11 * RedisReplyLimits.elementBytes)
        // One string announced at its largest: refused once its bytes pass the reply's, not at its end.
        let reader = try RedisReplyReader(limits: small)
        let header = Array("$100000\r\n".utf8) + [UInt8](repeating: 0, count: small.maxReplyBytes)
        try header.withUnsafeBytes { raw in
            try Result { () throws(RedisConnectionFailure) in try reader.feed(raw) }.get()
        }
        #expect(throws: RedisConnectionFailure.self) { try reader.next() }
        // Strings as long as the bytes allow, in several replies fed at once, are each within their own bound.
        let each = bulk(1_000)
        #expect(try replies(each + each + each, limits: small).count == 3)
    }

    @Test func bytesThatAreNotRESPAreRefused() {
        #expect(refusal(Array("@foo\r\n".utf8))?.contains("malformed") == true)
    }

    @Test func commandsAreFormattedAsArraysOfBulkStrings() throws {
        let encoded = try #require(RedisCommandEncoding.encode(["SET", "key", "", "é"]))
        #expect(String(decoding: encoded, as: UTF8.self) == "*4\r\n$3\r\nSET\r\n$3\r\nkey\r\n$0\r\n\r\n$2\r\né\r\n")
        #expect(RedisCommandEncoding.encode([""]).map { String(decoding: $0, as: UTF8.self) } == "*1\r\n$0\r\n\r\n")
    }

    @Test func theSharedBudgetReadsItsLargestReply() throws {
        // A `take` of the largest batch, every reservation refused with the longest wait.
        let limits = SharedRateBudget.replyLimits
        let values = String(repeating: ":-9223372036854775807\r\n", count: 64)
        #expect(try replies(Array("*64\r\n\(values)".utf8), limits: limits).count == 1)
        #expect(refusal(Array("*65\r\n".utf8), limits: limits) != nil)
    }
}
