/// Bytes to and from Redis: a TCP socket, or a TLS session over one.
package protocol RedisByteStream: AnyObject {
    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws(RedisConnectionFailure)
    /// Receives at least one byte into `buffer`; returns how many.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(RedisConnectionFailure) -> Int
}
