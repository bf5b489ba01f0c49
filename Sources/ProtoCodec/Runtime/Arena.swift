internal import CGatewayProtos
internal import CProtobufC

/// Owns the C memory of one protoc-c message tree while it is packed: every string, array and sub-message is
/// carved from a few chunks and freed together when the arena goes away, so packing an answer costs a handful
/// of allocations, not one per field. An arena (`Arena.scoped`) carves from a 1 KiB stack region first, so a
/// small answer (a status, a health answer) costs no allocation; past it, chunks come from the heap (2 KiB
/// first, each next one twice the last, up to 64 KiB). Single owner, never shared across threads.
///
/// protoc-c structs keep their `__init` defaults for fields left alone, including the shared
/// `protobuf_c_empty_string`, which the arena never sees and so never frees; an empty string the code sets
/// points at the arena type's own empty C string, never freed either.
final class Arena {
    private var chunks: [UnsafeMutableRawPointer] = []
    private var next: UnsafeMutableRawPointer?
    private var remaining = 0
    private var nextChunkBytes: Int

    /// The one empty C string every empty string field points at (protobuf-c only reads it).
    nonisolated(unsafe) private static let emptyString: UnsafeMutablePointer<CChar> = {
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return pointer
    }()

    /// How many bytes a scoped arena finds on the stack before it allocates: the most
    /// `withUnsafeTemporaryAllocation` places on the stack (a larger request is a heap allocation).
    static let stackBytes = 1024

    /// An arena that carves from `region` (not owned: it must outlive the arena's use) before allocating.
    private init(region: UnsafeMutableRawBufferPointer) {
        next = region.baseAddress
        remaining = region.count
        nextChunkBytes = 2 * region.count
    }

    deinit {
        for chunk in chunks { chunk.deallocate() }
    }

    /// Runs `body` with an arena whose first `stackBytes` are on the stack; every C value it made is gone
    /// when `body` returns, so nothing `body` returns may point into it.
    static func scoped<Result>(_ body: (Arena) -> Result) -> Result {
        withUnsafeTemporaryAllocation(byteCount: stackBytes, alignment: 16) { region in
            let arena = Arena(region: region)
            return withExtendedLifetime(arena) { body(arena) }
        }
    }

    /// `byteCount` uninitialised bytes aligned to `alignment` (a power of two, at most 8: protobuf-c's
    /// structs hold pointers, 64-bit integers and doubles at most). Chunks come from plain `malloc` (8-byte
    /// alignment asks for no aligned allocation), small ones from its per-thread cache.
    private func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        precondition(alignment <= 8, "protobuf-c types are at most 8-byte aligned")
        if let next {
            let padding = Int(bitPattern: UInt(bitPattern: -Int(bitPattern: next))) & (alignment - 1)
            if padding + byteCount <= remaining {
                self.next = next + padding + byteCount
                remaining -= padding + byteCount
                return next + padding
            }
        }
        let size = max(nextChunkBytes, byteCount)
        nextChunkBytes = min(nextChunkBytes * 2, 64 << 10)
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        chunks.append(chunk)
        next = chunk + byteCount
        remaining = size - byteCount
        return chunk
    }

    /// A message struct initialised by its protoc-c `__init` (a zeroed struct has no descriptor and aborts).
    func message<T>(of type: T.Type, initialize: (UnsafeMutablePointer<T>) -> Void) -> UnsafeMutablePointer<T> {
        let pointer = allocate(byteCount: MemoryLayout<T>.stride, alignment: MemoryLayout<T>.alignment)
            .bindMemory(to: T.self, capacity: 1)
        initialize(pointer)
        return pointer
    }

    /// A NUL-terminated copy of `string` (UTF-8).
    func string(_ string: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = string.utf8
        guard !utf8.isEmpty else { return Self.emptyString }
        let pointer = allocate(byteCount: utf8.count + 1, alignment: 1).bindMemory(
            to: CChar.self, capacity: utf8.count + 1)
        let buffer = UnsafeMutableRawBufferPointer(start: pointer, count: utf8.count)
        buffer.copyBytes(from: utf8)
        pointer[utf8.count] = 0
        return pointer
    }

    /// A `bytes` field value pointing at a copy of `bytes`.
    func bytes(_ bytes: [UInt8]) -> ProtobufCBinaryData {
        guard !bytes.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        let pointer = allocate(byteCount: bytes.count, alignment: 1).bindMemory(to: UInt8.self, capacity: bytes.count)
        pointer.initialize(from: bytes, count: bytes.count)
        return ProtobufCBinaryData(len: bytes.count, data: pointer)
    }

    /// The `n_x` count and `x` array of a repeated scalar, string or enum field.
    func array<Element, CElement>(
        _ elements: some Collection<Element>, _ convert: (Element) -> CElement
    ) -> (Int, UnsafeMutablePointer<CElement>?) {
        guard !elements.isEmpty else { return (0, nil) }
        let pointer = allocate(
            byteCount: MemoryLayout<CElement>.stride * elements.count, alignment: MemoryLayout<CElement>.alignment
        ).bindMemory(to: CElement.self, capacity: elements.count)
        for (index, element) in elements.enumerated() {
            (pointer + index).initialize(to: convert(element))
        }
        return (elements.count, pointer)
    }

    /// The `n_x` count and `x` array of pointers of a repeated message or map field.
    func messages<Element, CMessage>(
        _ elements: some Collection<Element>, _ convert: (Element) -> UnsafeMutablePointer<CMessage>
    ) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<CMessage>?>?) {
        array(elements) { Optional(convert($0)) }
    }

    /// A repeated string field: `char **`.
    func strings(_ elements: [String]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        array(elements) { Optional(string($0)) }
    }
}
