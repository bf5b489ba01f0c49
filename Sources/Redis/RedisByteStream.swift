/// Bytes to and from Redis: a TCP socket, or a TLS session over one. Every call ends by `deadline`, the one
/// fixed for the connect or pipeline it is part of.
package protocol RedisByteStream: AnyObject {
    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8], before deadline: RedisDeadline) throws(RedisConnectionFailure)
    /// Receives at least one byte into `buffer`; returns how many.
    func receive(into buffer: UnsafeMutableRawBufferPointer, before deadline: RedisDeadline)
        throws(RedisConnectionFailure) -> Int
}
