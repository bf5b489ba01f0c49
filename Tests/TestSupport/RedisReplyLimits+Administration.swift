import Redis

extension RedisReplyLimits {
    /// For tests' own connections (INFO, KEYS, GET of what the gateway wrote): generous, still bounded.
    package static let administration = RedisReplyLimits(
        largestValue: 1 << 20, valueBytes: 1 << 22, elements: 10_000, depth: 3)
}
