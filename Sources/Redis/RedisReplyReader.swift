internal import CHiredis

/// The RESP parser of one connection: hiredis's reader, fed whatever bytes arrive and asked for whole
/// replies, within `limits`. Strings, element counts and depth are refused as hiredis announces them (before
/// it allocates); the bytes of the reply being read are counted as they are fed, so a reply past
/// `maxReplyBytes` fails without waiting for its end. The owner of the `redisReader` and of its bounds.
package final class RedisReplyReader {
    package let limits: RedisReplyLimits
    private let bounds: UnsafeMutablePointer<chiredis_bounds>
    private let reader: UnsafeMutablePointer<redisReader>
    /// Bytes fed since the reply being read began (with the first bytes of any later replies).
    private var replyBytes = 0

    package init(limits: RedisReplyLimits) throws(RedisConnectionFailure) {
        self.limits = limits
        bounds = .allocate(capacity: 1)
        bounds.initialize(to: chiredis_bounds())
        bounds.pointee.max_string_bytes = limits.maxStringBytes
        bounds.pointee.max_elements = Int64(limits.maxElements)
        bounds.pointee.max_depth = Int32(clamping: limits.maxDepth)
        guard let reader = chiredis_reader_create(bounds) else {
            bounds.deallocate()
            throw RedisConnectionFailure(kind: .connect, message: "cannot allocate a Redis reply reader")
        }
        self.reader = reader
    }

    deinit {
        redisReaderFree(reader)  // first: it may free a partial reply through the bounds' functions
        bounds.deallocate()
    }

    /// Whether bytes were fed that no reply has used yet.
    package var hasUnreadBytes: Bool { chiredis_reader_unread(reader) > 0 }

    /// Appends bytes that arrived.
    package func feed(_ bytes: UnsafeRawBufferPointer) throws(RedisConnectionFailure) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        guard redisReaderFeed(reader, base.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK else {
            throw RedisConnectionFailure(kind: .protocolError, message: "cannot buffer a Redis reply")
        }
        replyBytes += bytes.count
    }

    /// The next whole reply, or nil until more bytes are fed. Throws when the bytes are not RESP or a reply
    /// is past a bound; the reader is unusable after that (the connection closes).
    package func next() throws(RedisConnectionFailure) -> RedisReply? {
        var raw: UnsafeMutablePointer<redisReply>?
        guard chiredis_reader_get_reply(reader, &raw) == REDIS_OK else { throw failure() }
        guard let raw else {
            guard replyBytes <= limits.maxReplyBytes else {
                throw RedisConnectionFailure(
                    kind: .protocolError,
                    message: "Redis sent a reply of more than \(limits.maxReplyBytes) bytes")
            }
            return nil
        }
        defer { freeReplyObject(raw) }
        bounds.pointee.elements = 0
        replyBytes = chiredis_reader_unread(reader)
        guard let reply = Self.copy(raw) else {
            throw RedisConnectionFailure(kind: .protocolError, message: "Redis sent a reply of an unknown type")
        }
        return reply
    }

    private func failure() -> RedisConnectionFailure {
        let reason: String
        switch Int32(bounds.pointee.exceeded) {
        case Int32(CHIREDIS_STRING_TOO_LONG): reason = "a string of more than \(limits.maxStringBytes) bytes"
        case Int32(CHIREDIS_TOO_MANY_ELEMENTS): reason = "more than \(limits.maxElements) array elements"
        case Int32(CHIREDIS_TOO_DEEP): reason = "arrays nested more than \(limits.maxDepth) deep"
        default:
            let text = withUnsafeBytes(of: reader.pointee.errstr) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            return RedisConnectionFailure(kind: .protocolError, message: "Redis sent a malformed reply: \(text)")
        }
        return RedisConnectionFailure(kind: .protocolError, message: "Redis sent a reply with \(reason)")
    }

    /// A Swift copy of hiredis's reply (already within the bounds, which hiredis enforced while building it).
    private static func copy(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply? {
        let value = reply.pointee
        func bytes() -> [UInt8] {
            guard let str = value.str else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: value.len))
        }
        switch value.type {
        case REDIS_REPLY_INTEGER: return .integer(Int64(value.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_STRING: return .string(bytes())
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            items.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                guard let child = chiredis_element(reply, index), let item = copy(child) else {
                    return nil
                }
                items.append(item)
            }
            return .array(items)
        default: return nil
        }
    }
}
