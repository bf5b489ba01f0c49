internal import CProtobufC

/// Owns the C memory of one protoc-c message tree while it is packed: every string, array and sub-message is
/// allocated here and freed together when the arena goes away. Single owner, never shared across threads.
///
/// protoc-c structs keep their `__init` defaults for fields left alone, including the shared
/// `protobuf_c_empty_string`, which the arena never sees and so never frees.
final class Arena {
    private var allocations: [UnsafeMutableRawPointer] = []

    init() {}

    deinit {
        for allocation in allocations { allocation.deallocate() }
    }

    /// A message struct initialised by its protoc-c `__init` (a zeroed struct has no descriptor and aborts).
    func message<T>(of type: T.Type, initialize: (UnsafeMutablePointer<T>) -> Void) -> UnsafeMutablePointer<T> {
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: 1)
        allocations.append(UnsafeMutableRawPointer(pointer))
        initialize(pointer)
        return pointer
    }

    /// A NUL-terminated copy of `string` (UTF-8).
    func string(_ string: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = string.utf8
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count + 1)
        allocations.append(UnsafeMutableRawPointer(pointer))
        let buffer = UnsafeMutableRawBufferPointer(start: pointer, count: utf8.count)
        buffer.copyBytes(from: utf8)
        pointer[utf8.count] = 0
        return pointer
    }

    /// A `bytes` field value pointing at a copy of `bytes`.
    func bytes(_ bytes: [UInt8]) -> ProtobufCBinaryData {
        guard !bytes.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
        allocations.append(UnsafeMutableRawPointer(pointer))
        pointer.initialize(from: bytes, count: bytes.count)
        return ProtobufCBinaryData(len: bytes.count, data: pointer)
    }

    /// The `n_x` count and `x` array of a repeated scalar, string or enum field.
    func array<Element, CElement>(
        _ elements: some Collection<Element>, _ convert: (Element) -> CElement
    ) -> (Int, UnsafeMutablePointer<CElement>?) {
        guard !elements.isEmpty else { return (0, nil) }
        let pointer = UnsafeMutablePointer<CElement>.allocate(capacity: elements.count)
        allocations.append(UnsafeMutableRawPointer(pointer))
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
