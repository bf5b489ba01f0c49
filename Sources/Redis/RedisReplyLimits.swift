/// What one Redis reply may hold, so that neither a broken nor a hostile server can make the gateway
/// allocate without bound: the longest string, the array elements (nested arrays included), the nesting
/// depth and the bytes on the wire. Each user of a connection derives them from the largest value it writes
/// and the largest reply it asks for, so a value the gateway stored can always be read back.
package struct RedisReplyLimits: Sendable, Hashable {
    /// Longest bulk string, status or error.
    package var maxStringBytes: Int
    /// Most array elements announced by one reply, every nested array counted.
    package var maxElements: Int
    /// Deepest array nesting (1: a flat array).
    package var maxDepth: Int
    /// Most bytes one reply may take on the wire.
    package var maxReplyBytes: Int

    /// Wire bytes allowed per element besides the long values: a type byte, a length of up to 20 digits,
    /// two CRLFs and a short value (a stream id, a number, a field name).
    package static let elementBytes = 64

    /// Limits for replies whose strings are at most `largestValue` bytes long and at most `valueBytes` long
    /// together, in at most `elements` array elements nested at most `depth` deep.
    package init(largestValue: Int, valueBytes: Int, elements: Int, depth: Int) {
        maxStringBytes = max(0, largestValue)
        maxElements = max(0, elements)
        maxDepth = max(1, depth)
        maxReplyBytes = max(0, valueBytes) + (maxElements + 1) * Self.elementBytes
    }
}
