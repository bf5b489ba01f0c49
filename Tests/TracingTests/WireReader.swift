/// A test-only protobuf reader: a message's fields in order, each a number and its raw value, so encodings
/// can be checked field by field.
struct WireReader {
    enum Value: Equatable {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes([UInt8])

        var bytes: [UInt8]? { if case .bytes(let b) = self { b } else { nil } }
        var string: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
        var message: [(Int, Value)]? { bytes.flatMap { WireReader.fields($0) } }
    }

    /// The fields of `bytes`, or nil when they are not well-formed protobuf.
    static func fields(_ bytes: [UInt8]) -> [(Int, Value)]? {
        var index = 0
        var out: [(Int, Value)] = []
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        func little(_ count: Int) -> UInt64? {
            guard index + count <= bytes.count else { return nil }
            var value: UInt64 = 0
            for offset in 0..<count { value |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
            index += count
            return value
        }
        while index < bytes.count {
            guard let key = varint() else { return nil }
            let field = Int(key >> 3)
            switch key & 7 {
            case 0: guard let v = varint() else { return nil }; out.append((field, .varint(v)))
            case 1: guard let v = little(8) else { return nil }; out.append((field, .fixed64(v)))
            case 5: guard let v = little(4) else { return nil }; out.append((field, .fixed32(UInt32(v))))
            case 2:
                guard let length = varint(), index + Int(length) <= bytes.count else { return nil }
                out.append((field, .bytes(Array(bytes[index..<index + Int(length)]))))
                index += Int(length)
            default: return nil
            }
        }
        return out
    }
}

extension Array where Element == (Int, WireReader.Value) {
    /// The values of field `number`, in order.
    func values(_ number: Int) -> [WireReader.Value] { filter { $0.0 == number }.map(\.1) }
    /// The first value of field `number`.
    func first(_ number: Int) -> WireReader.Value? { values(number).first }
}
