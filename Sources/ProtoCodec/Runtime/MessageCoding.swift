internal import CGatewayProtos
internal import CProtobufC

// The generic halves of every generated message's encode and decode. Generated code passes the typed protoc-c
// functions; these do the memory work in one place.

/// Unpacks `bytes` with protoc-c, copies the result into Swift, and always frees the C message.
func decodeMessage<CMessage, Message: ProtoMessage>(
    _ bytes: UnsafeRawBufferPointer,
    unpack: (Int, UnsafePointer<UInt8>) -> UnsafeMutablePointer<CMessage>?,
    copy: (UnsafePointer<CMessage>) -> Message
) throws(ProtoDecodingError) -> Message {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return Message() }
    guard let c = unpack(bytes.count, base.assumingMemoryBound(to: UInt8.self)) else {
        throw .malformed
    }
    // protobuf_c_message_free_unpacked frees the whole tree protoc-c allocated: after the copy, always.
    defer { protobuf_c_message_free_unpacked(cBase(c), nil) }
    return copy(c)
}

/// The size of `message` packed.
func packedSize<Message, CMessage>(
    of message: Message, build: (Message, Arena) -> UnsafeMutablePointer<CMessage>
) -> Int {
    Arena.scoped { arena in Int(protobuf_c_message_get_packed_size(cBase(build(message, arena)))) }
}

/// Packs `message` at the start of `buffer`.
func pack<Message, CMessage>(
    _ message: Message, into buffer: UnsafeMutableRawBufferPointer,
    build: (Message, Arena) -> UnsafeMutablePointer<CMessage>
) {
    Arena.scoped { arena in
        let c = cBase(build(message, arena))
        let size = Int(protobuf_c_message_get_packed_size(c))
        precondition(buffer.count >= size, "serialize(into:) needs \(size) bytes, got \(buffer.count)")
        guard size > 0, let out = buffer.baseAddress else { return }
        let written = protobuf_c_message_pack(c, out.assumingMemoryBound(to: UInt8.self))
        precondition(written == size, "protobuf-c packed \(written) bytes, announced \(size)")
    }
}

/// Packs `message` at the end of `buffer`: a new array of the final size takes `buffer`'s bytes and then
/// protobuf-c packs straight into its storage (no zero fill first; Swift gives an existing array no
/// uninitialised tail). Callers append to a short buffer (nothing, or a gRPC prefix), so the copy is small.
func packAppending<Message, CMessage>(
    _ message: Message, to buffer: inout [UInt8],
    build: (Message, Arena) -> UnsafeMutablePointer<CMessage>
) {
    Arena.scoped { arena in
        let c = cBase(build(message, arena))
        let size = Int(protobuf_c_message_get_packed_size(c))
        guard size > 0 else { return }
        let start = buffer.count
        buffer = buffer.withUnsafeBufferPointer { prefix in
            [UInt8](unsafeUninitializedCapacity: start + size) { storage, count in
                _ = storage.initialize(from: prefix)
                let written = protobuf_c_message_pack(c, storage.baseAddress! + start)
                precondition(written == size, "protobuf-c packed \(written) bytes, announced \(size)")
                count = start + size
            }
        }
    }
}

/// The `ProtobufCMessage base` every protoc-c message struct starts with.
func cBase<CMessage>(_ message: UnsafeMutablePointer<CMessage>) -> UnsafeMutablePointer<ProtobufCMessage> {
    UnsafeMutablePointer<ProtobufCMessage>(OpaquePointer(message))
}

// MARK: Copying C field values into Swift.

/// A string field: protoc-c strings are NUL-terminated UTF-8 (invalid sequences are repaired).
func cString(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(cString: pointer)
}

/// A bytes field.
func cBytes(_ data: ProtobufCBinaryData) -> [UInt8] {
    guard data.len > 0, let pointer = data.data else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: data.len))
}

/// A repeated scalar, string or enum field.
func cArray<CElement, Element>(
    _ count: Int, _ pointer: UnsafeMutablePointer<CElement>?, _ convert: (CElement) -> Element
) -> [Element] {
    guard count > 0, let pointer else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).map(convert)
}

/// A repeated message field.
func cMessages<CMessage, Element>(
    _ count: Int, _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<CMessage>?>?,
    _ convert: (UnsafePointer<CMessage>) -> Element
) -> [Element] {
    guard count > 0, let pointer else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).compactMap { $0.map { convert($0) } }
}

/// A map field: its entries; a later duplicate key wins, as in every protobuf runtime.
func cMap<CEntry, Key: Hashable, Value>(
    _ count: Int, _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<CEntry>?>?,
    _ convert: (UnsafeMutablePointer<CEntry>) -> (Key, Value)
) -> [Key: Value] {
    guard count > 0, let pointer else { return [:] }
    var map: [Key: Value] = [:]
    for entry in UnsafeBufferPointer(start: pointer, count: count) {
        guard let entry else { continue }
        let (key, value) = convert(entry)
        map[key] = value
    }
    return map
}
