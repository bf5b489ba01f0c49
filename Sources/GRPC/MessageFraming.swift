import GatewayCore

/// Splits a request body into gRPC messages: each is a 1-byte compressed flag, a 4-byte big-endian length
/// and the payload (PROTOCOL-HTTP2.md "Length-Prefixed-Message"). DATA frames and messages do not align,
/// so bytes are accumulated until a whole message is present.
struct MessageDeframer {
    /// The largest payload accepted; a longer declared length fails before its bytes arrive.
    let maxMessageSize: Int
    /// Whether a compressed message (flag 1) may be accepted; no encoding is negotiated today.
    let compressionAllowed: Bool

    private var buffer: [UInt8] = []
    private var start = 0

    init(maxMessageSize: Int, compressionAllowed: Bool = false) {
        self.maxMessageSize = maxMessageSize
        self.compressionAllowed = compressionAllowed
    }

    /// True when no partial message is buffered.
    var isEmpty: Bool { start == buffer.count }

    /// Appends received bytes.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message, nil when more bytes are needed, or the status that ends the call.
    mutating func next() throws(RPCStatus) -> [UInt8]? {
        let available = buffer.count - start
        guard available >= 5 else { return nil }
        let flag = buffer[start]
        let length = Int(buffer[start + 1]) << 24 | Int(buffer[start + 2]) << 16
            | Int(buffer[start + 3]) << 8 | Int(buffer[start + 4])
        switch flag {
        case 0: break
        case 1 where !compressionAllowed:
            throw RPCStatus(.unimplemented, "compressed messages are not supported: send with grpc-encoding identity")
        case 1: break
        default:
            throw RPCStatus(.internal, "invalid gRPC message prefix: compressed flag \(flag)")
        }
        if length > maxMessageSize {
            throw RPCStatus(
                .resourceExhausted,
                "request message of \(length) bytes exceeds the server's limit of \(maxMessageSize) bytes")
        }
        guard available >= 5 + length else { return nil }
        let message = Array(buffer[(start + 5)..<(start + 5 + length)])
        start += 5 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            start = 0
        } else if start > 64 * 1024 && start * 2 > buffer.count {
            buffer.removeFirst(start)  // a stream that always ends mid-message must not grow the buffer forever
            start = 0
        }
        return message
    }
}

/// Writes gRPC length-prefixed messages.
enum MessageFramer {
    /// Appends the 5-byte prefix (uncompressed) and then lets `payload` append exactly `length` bytes.
    static func appendFrame(to buffer: inout [UInt8], length: Int, payload: (inout [UInt8]) -> Void) {
        buffer.append(0)
        buffer.append(UInt8(truncatingIfNeeded: length >> 24))
        buffer.append(UInt8(truncatingIfNeeded: length >> 16))
        buffer.append(UInt8(truncatingIfNeeded: length >> 8))
        buffer.append(UInt8(truncatingIfNeeded: length))
        let before = buffer.count
        payload(&buffer)
        precondition(buffer.count - before == length, "a message wrote \(buffer.count - before) bytes, announced \(length)")
    }

    /// Appends one framed message holding `payload`.
    static func appendFrame(to buffer: inout [UInt8], payload: [UInt8]) {
        appendFrame(to: &buffer, length: payload.count) { $0.append(contentsOf: payload) }
    }
}
