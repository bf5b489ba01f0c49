/// What went wrong talking to Redis (the `kind` label of the error counter).
package enum RedisFailureKind: String, Sendable, Hashable {
    /// No connection could be made.
    case connect
    /// A command did not answer within `redis.timeout`.
    case timeout
    /// The connection broke, or Redis answered something unexpected.
    case protocolError = "protocol"
    /// Redis answered with an error (other than NOSCRIPT, which is handled by reloading).
    case redisError = "error"
}
