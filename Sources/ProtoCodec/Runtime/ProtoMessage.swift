/// Why bytes could not be decoded as a message.
public enum ProtoDecodingError: Error, Sendable, Hashable {
    /// protobuf-c rejected the bytes: truncated, a bad wire type or length, or the wrong message.
    case malformed
}

/// A generated message value: encoded and decoded with the protobuf wire format through protobuf-c.
///
/// Decoding skips unknown fields and keeps unknown enum numbers (`.unrecognized`); encoding is deterministic
/// (fields in number order, map entries sorted by key).
public protocol ProtoMessage: Sendable, Hashable {
    /// The fully qualified proto name, e.g. "google.rpc.ErrorInfo".
    static var protoMessageName: String { get }
    /// A message with every field at its proto3 default.
    init()
    /// Decodes the protobuf wire format.
    init(serializedBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError)
    /// The number of bytes `serialize(into:)` writes.
    func serializedSize() -> Int
    /// Writes the wire format at the start of `buffer`, which must hold at least `serializedSize()` bytes.
    func serialize(into buffer: UnsafeMutableRawBufferPointer)
    /// Appends the wire format to `buffer`, packing straight into the array's storage.
    func appendSerialized(to buffer: inout [UInt8])
    /// The app the message names, for the per-app authorization: `app` for an `AppNamingMessage`, else nil.
    /// Each generated message implements it itself (no default: a message cannot inherit the wrong answer).
    var namedApp: String? { get }
}

extension ProtoMessage {
    /// Decodes the protobuf wire format held in an array. Inlinable, so a caller decoding one message type
    /// gets it specialised: no run-time lookup of a generic type's metadata on every request.
    @inlinable
    public init(serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        if bytes.isEmpty {  // the encoding of a message with every field at its default
            self.init()
            return
        }
        // withUnsafeBytes rethrows untyped errors: the outcome leaves the closure as values instead.
        var decoded: Self?
        var failure = ProtoDecodingError.malformed
        bytes.withUnsafeBytes { raw in
            do throws(ProtoDecodingError) {
                decoded = try Self(serializedBytes: raw)
            } catch {
                failure = error
            }
        }
        guard let decoded else { throw failure }
        self = decoded
    }

    /// The wire format as a new array.
    public func serializedBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        appendSerialized(to: &bytes)
        return bytes
    }

    /// A default message changed by `configure`: `Transaction.with { $0.transactionId = "1" }`.
    public static func with(_ configure: (inout Self) throws -> Void) rethrows -> Self {
        var message = Self()
        try configure(&message)
        return message
    }
}

/// A message with a top-level `string app` field, as every gateway request about one app has: the generator
/// adds the conformance to each such message, so the per-app authorization (which asks for it after
/// decoding) cannot be forgotten for a new RPC.
public protocol AppNamingMessage {
    /// The app as the caller named it (an app name or bundle id; empty = the only configured app).
    var app: String { get }
}
