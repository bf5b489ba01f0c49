import GatewayFoundation
import HTTPServer
import ProtoCodec

/// Splits a request body into gRPC messages: each is a 1-byte compressed flag, a 4-byte big-endian length
/// and the payload (PROTOCOL-HTTP2.md "Length-Prefixed-Message"). DATA frames and messages do not align,
/// so bytes are accumulated until a whole message is present.
struct MessageDeframer {
    /// The largest payload accepted; a longer declared length fails before its bytes arrive.
    let maxMessageSize: Int
    /// Whether a compressed message (flag 1) may be accepted; no encoding is negotiated today.
    let compressionAllowed: Bool

    private var buffer = ByteQueue()
    /// A message that arrived whole in one chunk, taken without passing through `buffer`.
    private var ready: [UInt8]?

    init(maxMessageSize: Int, compressionAllowed: Bool = false) {
        self.maxMessageSize = maxMessageSize
        self.compressionAllowed = compressionAllowed
    }

    /// True when no partial message is buffered.
    var isEmpty: Bool { buffer.isEmpty && ready == nil }

    /// Appends received bytes. A chunk that is exactly one valid uncompressed message (a unary request,
    /// usually) becomes that message at once, with no buffer.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if buffer.isEmpty && ready == nil && bytes.count >= 5 && bytes[0] == 0 {
            let length = Int(bytes[1]) << 24 | Int(bytes[2]) << 16 | Int(bytes[3]) << 8 | Int(bytes[4])
            if length == bytes.count - 5 && length <= maxMessageSize {
                ready = Array(bytes[5...])
                return
            }
        }
        buffer.append(bytes)
    }

    /// The next complete message, nil when more bytes are needed, or the status that ends the call.
    mutating func next() throws(RPCStatus) -> [UInt8]? {
        if let message = ready {
            ready = nil
            return message
        }
        let available = buffer.count
        guard available >= 5 else { return nil }
        let flag = buffer[0]
        let length = Int(buffer[1]) << 24 | Int(buffer[2]) << 16 | Int(buffer[3]) << 8 | Int(buffer[4])
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
        let message = buffer.copy(offset: 5, count: length)
        buffer.consume(5 + length)
        return message
    }
}

/// A response message as it goes on the wire: the gRPC prefix (a 0 byte for "uncompressed" and the 4-byte
/// big-endian length) and the message's bytes, in one array. It is made where the message is encoded, packed
/// straight behind the prefix, so the loop queues the array on the stream as it is: framing copies nothing.
public struct FramedMessage: Sendable, Hashable {
    /// The prefix and the message.
    public let bytes: [UInt8]

    /// `message` encoded behind its prefix.
    @inlinable
    public init(_ message: some ProtoMessage) {
        var bytes: [UInt8] = [0, 0, 0, 0, 0]
        message.appendSerialized(to: &bytes)
        Self.writePrefix(&bytes)
        self.bytes = bytes
    }

    /// `bytes` holds 5 placeholder bytes, then the message: the placeholders become the prefix, in place.
    @usableFromInline
    static func writePrefix(_ bytes: inout [UInt8]) {
        let length = bytes.count - 5
        bytes[1] = UInt8(truncatingIfNeeded: length >> 24)
        bytes[2] = UInt8(truncatingIfNeeded: length >> 16)
        bytes[3] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[4] = UInt8(truncatingIfNeeded: length)
    }

    /// The message's own bytes, without the prefix.
    public var payload: ArraySlice<UInt8> { bytes[5...] }
}
