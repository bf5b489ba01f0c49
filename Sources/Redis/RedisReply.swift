/// One Redis reply, copied out of hiredis (bounded: see `RedisReplyLimits`).
package enum RedisReply: Sendable, Hashable {
    case integer(Int64)
    case string([UInt8])
    case status(String)
    case error(String)
    case array([RedisReply])
    case null

    /// The integers of an array reply; nil for anything else.
    package var integers: [Int64]? {
        guard case .array(let items) = self else { return nil }
        var values: [Int64] = []
        values.reserveCapacity(items.count)
        for item in items {
            guard case .integer(let value) = item else { return nil }
            values.append(value)
        }
        return values
    }

    /// The text of a bulk-string reply.
    package var text: String? {
        guard case .string(let bytes) = self else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
