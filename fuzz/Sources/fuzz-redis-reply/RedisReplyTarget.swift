@testable import Redis

/// The Redis reply reader (hiredis's RESP parser within the gateway's bounds) over arbitrary bytes, as a
/// hostile or broken Redis server could send them, in pieces of the size the first byte picks. Nothing may
/// trap, and no reply may come out larger than its bounds allow.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRedisReply(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let piece = Int(input[0] % 32) + 1
    let limits = RedisReplyLimits(largestValue: 256, valueBytes: 1024, elements: 16, depth: 3)
    guard let reader = try? RedisReplyReader(limits: limits) else { return 0 }
    var offset = 1
    while offset < size {
        let end = min(size, offset + piece)
        do {
            try reader.feed(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
            while let reply = try reader.next() { check(reply, limits: limits, depth: 0) }
        } catch {
            return 0  // the connection would close: the expected answer to bad bytes
        }
        offset = end
    }
    return 0
}

private func check(_ reply: RedisReply, limits: RedisReplyLimits, depth: Int) {
    switch reply {
    case .string(let bytes): precondition(bytes.count <= limits.maxStringBytes, "a string past its bound")
    case .status(let text), .error(let text): precondition(text.utf8.count <= limits.maxStringBytes * 4)
    case .array(let items):
        precondition(depth < limits.maxDepth && items.count <= limits.maxElements, "an array past its bounds")
        for item in items { check(item, limits: limits, depth: depth + 1) }
    case .integer, .null: break
    }
}
