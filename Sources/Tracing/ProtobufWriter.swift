/// The protobuf wire format, written forward into a byte array: enough of it for OTLP (varints, fixed
/// 32/64-bit values, length-delimited strings, bytes and nested messages). Proto3 rules: a scalar field at
/// its default value is left out, unless `keepDefault` says it is a member of a oneof (whose presence is
/// the value).
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init() {}

    private enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    /// A base-128 varint, least significant group first.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A `uint64`/`int64`/enum field (an `int64` is its two's complement: negative values take 10 bytes).
    mutating func varintField(_ field: Int, _ value: UInt64, keepDefault: Bool = false) {
        guard value != 0 || keepDefault else { return }
        tag(field, .varint)
        varint(value)
    }

    /// A `bool` field.
    mutating func boolField(_ field: Int, _ value: Bool, keepDefault: Bool = false) {
        varintField(field, value ? 1 : 0, keepDefault: keepDefault)
    }

    /// A `fixed64` field, little-endian.
    mutating func fixed64Field(_ field: Int, _ value: UInt64, keepDefault: Bool = false) {
        guard value != 0 || keepDefault else { return }
        tag(field, .fixed64)
        appendLittleEndian(value, count: 8)
    }

    /// A `fixed32` field, little-endian.
    mutating func fixed32Field(_ field: Int, _ value: UInt32, keepDefault: Bool = false) {
        guard value != 0 || keepDefault else { return }
        tag(field, .fixed32)
        appendLittleEndian(UInt64(value), count: 4)
    }

    /// A `double` field (IEEE 754, little-endian).
    mutating func doubleField(_ field: Int, _ value: Double, keepDefault: Bool = false) {
        guard value.bitPattern != 0 || keepDefault else { return }
        tag(field, .fixed64)
        appendLittleEndian(value.bitPattern, count: 8)
    }

    /// A `string` field (UTF-8).
    mutating func stringField(_ field: Int, _ value: String, keepDefault: Bool = false) {
        guard !value.isEmpty || keepDefault else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// A `bytes` field.
    mutating func bytesField(_ field: Int, _ value: [UInt8], keepDefault: Bool = false) {
        guard !value.isEmpty || keepDefault else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A nested message field, written by `body` (present even when empty: a message field is set or not).
    mutating func messageField(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        tag(field, .lengthDelimited)
        varint(UInt64(nested.bytes.count))
        bytes.append(contentsOf: nested.bytes)
    }

    private mutating func appendLittleEndian(_ value: UInt64, count: Int) {
        for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
}
