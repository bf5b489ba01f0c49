internal import CGatewayProtos
internal import CProtobufC

/// The canonical proto3 JSON of a generated message: what Google's Python `json_format.MessageToJson` prints with
/// its default options (lowerCamelCase names, `ensure_ascii=False`), without whitespace. Deterministic: the same
/// message always gives the same bytes (fields in number order, map entries sorted by key), so deliveries of one
/// event can be compared byte for byte.
///
/// - Fields at their proto3 default are left out; a set message field is printed even when empty (`{}`), a set
///   oneof case even at its default. Repeated fields are arrays and map fields objects, left out when empty.
/// - 64-bit integers are strings, 32-bit ones numbers; `bool` is `true`/`false`; `bytes` standard base64 with
///   padding; an enum is its value's name, a number no value has is printed as the number.
/// - `float`/`double` (only in wrappers here) are printed as Python prints them (`1.0`, `1e-05`, `1e+16`;
///   `"NaN"`, `"Infinity"`, `"-Infinity"`); a `float` with the fewest digits, 6 at least, that read back as it
///   (`ToShortestFloat`). -0.0 prints as `0.0`: protobuf-c's encoding, which the encoder goes through, drops it.
/// - Strings: `"`, `\` and the control characters below U+0020 escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else
///   `\u00xx`), everything else (DEL, non-ASCII) as UTF-8. A string is cut at its first NUL, as its protobuf
///   encoding is (protobuf-c's strings are C strings).
/// - Well-known types: `Timestamp` as RFC 3339 UTC (`"2026-11-29T05:00:00Z"`, with 0, 3, 6 or 9 fractional
///   digits), `Duration` as `"1.500s"`, wrappers as their bare value, `Any` as `{"@type": url, ...fields}` (a
///   well-known payload as `{"@type": url, "value": json}`) for every message type ProtoCodec generates.
///
/// Where `json_format` has no answer (it raises), the output is still deterministic and documented here: a
/// `Timestamp` outside 0001-01-01...9999-12-31 or with nanos outside 0..<1e9, or a `Duration` beyond ±10,000 years
/// or with nanos out of range or of the other sign, prints as a plain message (`{"seconds":"…","nanos":…}`); an
/// `Any` whose type URL names no message ProtoCodec generates, whose value does not decode as that type, or
/// nested more than 64 `Any`s deep prints as `{"@type": url, "value": base64 of the value}` (not canonical JSON:
/// no reader can interpret it). Invalid UTF-8 in an `Any`'s value is replaced with U+FFFD. A `ProtoMessage`
/// type that ProtoCodec did not generate has no schema and encodes as `{}`.
public enum ProtoJSON {
    /// The message's canonical proto3 JSON as UTF-8, with no whitespace.
    public static func encode(_ message: some ProtoMessage) -> [UInt8] {
        var writer = ProtoJSONWriter()
        guard let descriptor = ProtoSchema.shared.messages[type(of: message).protoMessageName] else {
            return Array("{}".utf8)
        }
        let written = message.serializedBytes().withUnsafeBufferPointer { bytes in
            writer.writeUnpacked(bytes, as: descriptor, anyDepth: 0)
        }
        return written ? writer.out : Array("{}".utf8)
    }
}

/// Every message descriptor protoc-c generated (Sources/CGatewayProtos/message_registry.c), by full name, and
/// the messages the JSON mapping treats specially. The descriptors are immutable static C data.
struct ProtoSchema: @unchecked Sendable {
    enum Kind {
        case mapEntry, timestamp, duration, any, wrapper
    }

    static let shared = ProtoSchema()

    let messages: [String: UnsafePointer<ProtobufCMessageDescriptor>]
    let kinds: [UnsafePointer<ProtobufCMessageDescriptor>: Kind]

    private init() {
        var count = 0
        var messages: [String: UnsafePointer<ProtobufCMessageDescriptor>] = [:]
        var kinds: [UnsafePointer<ProtobufCMessageDescriptor>: Kind] = [:]
        if let table = gateway_protos_messages(&count) {
            for row in UnsafeBufferPointer(start: table, count: count) {
                guard let descriptor = row.descriptor else { continue }
                let name = String(cString: descriptor.pointee.name)
                messages[name] = descriptor
                if row.map_entry != 0 {
                    kinds[descriptor] = .mapEntry
                } else if let kind = Self.wellKnown[name] {
                    kinds[descriptor] = kind
                }
            }
        }
        self.messages = messages
        self.kinds = kinds
    }

    private static let wellKnown: [String: Kind] = [
        "google.protobuf.Timestamp": .timestamp, "google.protobuf.Duration": .duration, "google.protobuf.Any": .any,
        "google.protobuf.DoubleValue": .wrapper, "google.protobuf.FloatValue": .wrapper,
        "google.protobuf.Int64Value": .wrapper, "google.protobuf.UInt64Value": .wrapper,
        "google.protobuf.Int32Value": .wrapper, "google.protobuf.UInt32Value": .wrapper,
        "google.protobuf.BoolValue": .wrapper, "google.protobuf.StringValue": .wrapper,
        "google.protobuf.BytesValue": .wrapper,
    ]
}

/// Walks protoc-c message structs by their descriptors (offsets, quantifiers, oneof cases) and appends JSON.
/// Recursion follows the schema's nesting (which has no cycles: a Swift value type cannot contain itself), plus
/// at most `maxAnyDepth` levels of `Any` payloads. Every C message it unpacks it frees before returning.
struct ProtoJSONWriter {
    static let maxAnyDepth = 64

    var out: [UInt8] = []
    private let schema = ProtoSchema.shared

    /// Unpacks `bytes` as `descriptor` with protobuf-c and writes its JSON; false (nothing written) when
    /// protobuf-c rejects the bytes.
    mutating func writeUnpacked(
        _ bytes: UnsafeBufferPointer<UInt8>, as descriptor: UnsafePointer<ProtobufCMessageDescriptor>, anyDepth: Int
    ) -> Bool {
        guard let message = Self.unpack(bytes, as: descriptor) else { return false }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        writeMessage(message, anyDepth: anyDepth)
        return true
    }

    /// The C message protobuf-c unpacks from `bytes` (malloc'ed: the caller frees it with
    /// `protobuf_c_message_free_unpacked`), nil when it rejects them.
    private static func unpack(
        _ bytes: UnsafeBufferPointer<UInt8>, as descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> UnsafeMutablePointer<ProtobufCMessage>? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            var none: UInt8 = 0
            return protobuf_c_message_unpack(descriptor, nil, 0, &none)
        }
        return protobuf_c_message_unpack(descriptor, nil, bytes.count, base)
    }

    // MARK: Messages

    private mutating func writeMessage(_ message: UnsafePointer<ProtobufCMessage>, anyDepth: Int) {
        guard let descriptor = message.pointee.descriptor else {  // protobuf-c always sets it
            out.append(contentsOf: "{}".utf8)
            return
        }
        switch schema.kinds[descriptor] {
        case .timestamp?:
            if writeTimestamp(message, of: descriptor) { return }
        case .duration?:
            if writeDuration(message, of: descriptor) { return }
        case .wrapper?:
            if let field = Self.field(1, of: descriptor) {
                writeValue(field, at: UnsafeRawPointer(message) + Int(field.pointee.offset), anyDepth: anyDepth)
                return
            }
        case .any?:
            writeAny(message, of: descriptor, anyDepth: anyDepth)
            return
        case .mapEntry?, nil:
            break
        }
        out.append(UInt8(ascii: "{"))
        writeFields(message, of: descriptor, anyDepth: anyDepth, first: true)
        out.append(UInt8(ascii: "}"))
    }

    /// The fields that are present, in number order (protobuf-c's descriptors list them so), each `"name":value`.
    private mutating func writeFields(
        _ message: UnsafePointer<ProtobufCMessage>, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        anyDepth: Int, first: Bool
    ) {
        let base = UnsafeRawPointer(message)
        var first = first
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields + index
            let value = base + Int(field.pointee.offset)
            let quantifier = base + Int(field.pointee.quantifier_offset)
            if field.pointee.label == PROTOBUF_C_LABEL_REPEATED {
                let count = quantifier.load(as: Int.self)
                guard count > 0, let elements = value.load(as: UnsafeRawPointer?.self) else { continue }
                writeKey(field, first: &first)
                if let entry = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self),
                    field.pointee.type == PROTOBUF_C_TYPE_MESSAGE, schema.kinds[entry] == .mapEntry
                {
                    writeMap(elements, count: count, entry: entry, anyDepth: anyDepth)
                } else {
                    out.append(UInt8(ascii: "["))
                    let stride = Self.stride(of: field.pointee.type)
                    for element in 0..<count {
                        if element > 0 { out.append(UInt8(ascii: ",")) }
                        writeValue(field, at: elements + element * stride, anyDepth: anyDepth)
                    }
                    out.append(UInt8(ascii: "]"))
                }
                continue
            }
            guard Self.isPresent(field, value: value, quantifier: quantifier) else { continue }
            writeKey(field, first: &first)
            writeValue(field, at: value, anyDepth: anyDepth)
        }
    }

    /// Whether a singular field is printed: a oneof case when it is the set one, a proto2-style optional field by
    /// its `has_` flag, a proto3 implicit-presence field when it is not its default (bitwise, as upb decides).
    private static func isPresent(
        _ field: UnsafePointer<ProtobufCFieldDescriptor>, value: UnsafeRawPointer, quantifier: UnsafeRawPointer
    ) -> Bool {
        let type = field.pointee.type
        let isPointer = type == PROTOBUF_C_TYPE_MESSAGE || type == PROTOBUF_C_TYPE_STRING
        if field.pointee.flags & PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue != 0 {
            guard quantifier.load(as: UInt32.self) == field.pointee.id else { return false }
            return !isPointer || value.load(as: UnsafeRawPointer?.self) != nil
        }
        switch field.pointee.label {
        case PROTOBUF_C_LABEL_REQUIRED:
            return !isPointer || value.load(as: UnsafeRawPointer?.self) != nil
        case PROTOBUF_C_LABEL_OPTIONAL:
            if isPointer { return value.load(as: UnsafeRawPointer?.self) != nil }
            return quantifier.load(as: Int32.self) != 0
        default:
            switch type {
            case PROTOBUF_C_TYPE_MESSAGE:
                return value.load(as: UnsafeRawPointer?.self) != nil
            case PROTOBUF_C_TYPE_STRING:
                return value.load(as: UnsafePointer<UInt8>?.self).map { $0.pointee != 0 } ?? false
            case PROTOBUF_C_TYPE_BYTES:
                return value.load(as: ProtobufCBinaryData.self).len > 0
            default:
                return stride(of: type) == 8 ? value.load(as: UInt64.self) != 0 : value.load(as: UInt32.self) != 0
            }
        }
    }

    /// The bytes one element of a repeated field takes in protoc-c's array.
    private static func stride(of type: ProtobufCType) -> Int {
        switch type {
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
            PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE:
            8
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE: MemoryLayout<UnsafeRawPointer>.stride
        case PROTOBUF_C_TYPE_BYTES: MemoryLayout<ProtobufCBinaryData>.stride
        default: 4  // 32-bit numbers, float, protobuf_c_boolean, enums (protoc-c forces them to int size)
        }
    }

    private static func field(
        _ number: UInt32, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> UnsafePointer<ProtobufCFieldDescriptor>? {
        protobuf_c_message_descriptor_get_field(descriptor, number)
    }

    /// `"jsonName":`, after a comma unless it is the first: protoc's default json_name of the proto field name
    /// (each `_` removed and the letter after it upper-cased; the generator checks no field declares another).
    private mutating func writeKey(_ field: UnsafePointer<ProtobufCFieldDescriptor>, first: inout Bool) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        var upper = false
        var name = UnsafeRawPointer(field.pointee.name!).assumingMemoryBound(to: UInt8.self)
        while name.pointee != 0 {
            let byte = name.pointee
            if byte == UInt8(ascii: "_") {
                upper = true
            } else {
                out.append(upper && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte - 32 : byte)
                upper = false
            }
            name += 1
        }
        out.append(contentsOf: "\":".utf8)
    }

    // MARK: Values

    /// One value (a singular field, or one element of a repeated field) stored at `value`.
    private mutating func writeValue(
        _ field: UnsafePointer<ProtobufCFieldDescriptor>, at value: UnsafeRawPointer, anyDepth: Int
    ) {
        switch field.pointee.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            out.append(contentsOf: String(value.load(as: Int32.self)).utf8)
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            out.append(contentsOf: String(value.load(as: UInt32.self)).utf8)
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            writeQuoted(String(value.load(as: Int64.self)))
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            writeQuoted(String(value.load(as: UInt64.self)))
        case PROTOBUF_C_TYPE_FLOAT:
            ProtoJSONText.appendFloat(value.load(as: Float.self), to: &out)
        case PROTOBUF_C_TYPE_DOUBLE:
            ProtoJSONText.appendDouble(value.load(as: Double.self), to: &out)
        case PROTOBUF_C_TYPE_BOOL:
            out.append(contentsOf: (value.load(as: Int32.self) != 0 ? "true" : "false").utf8)
        case PROTOBUF_C_TYPE_ENUM:
            let number = value.load(as: Int32.self)
            if let enumType = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCEnumDescriptor.self),
                let known = protobuf_c_enum_descriptor_get_value(enumType, number)
            {
                writeString(known.pointee.name)
            } else {
                out.append(contentsOf: String(number).utf8)
            }
        case PROTOBUF_C_TYPE_STRING:
            writeString(value.load(as: UnsafePointer<CChar>?.self))
        case PROTOBUF_C_TYPE_BYTES:
            let data = value.load(as: ProtobufCBinaryData.self)
            out.append(UInt8(ascii: "\""))
            if data.len > 0, let bytes = data.data {
                ProtoJSONText.appendBase64(UnsafeBufferPointer(start: bytes, count: data.len), to: &out)
            }
            out.append(UInt8(ascii: "\""))
        case PROTOBUF_C_TYPE_MESSAGE:
            if let message = value.load(as: UnsafePointer<ProtobufCMessage>?.self) {
                writeMessage(message, anyDepth: anyDepth)
            } else if let type = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self),
                writeUnpacked(UnsafeBufferPointer(start: nil, count: 0), as: type, anyDepth: anyDepth)
            {
                // A map entry without its message value: the value is the type's default message.
            } else {
                out.append(contentsOf: "{}".utf8)
            }
        default:
            out.append(contentsOf: "null".utf8)  // no other type exists in protobuf-c
        }
    }

    private mutating func writeQuoted(_ text: String) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: text.utf8)
        out.append(UInt8(ascii: "\""))
    }

    /// A C string as a JSON string (invalid UTF-8 replaced with U+FFFD).
    private mutating func writeString(_ pointer: UnsafePointer<CChar>?) {
        ProtoJSONText.appendString(pointer.map { String(cString: $0) } ?? "", to: &out)
    }

    /// A map field: an object whose keys are the entries' keys as strings, sorted (strings by UTF-8 bytes,
    /// numbers by value, false before true), each key once (the last entry of a key wins, as in every runtime).
    private mutating func writeMap(
        _ elements: UnsafeRawPointer, count: Int, entry: UnsafePointer<ProtobufCMessageDescriptor>, anyDepth: Int
    ) {
        guard let keyField = Self.field(1, of: entry), let valueField = Self.field(2, of: entry) else {
            out.append(contentsOf: "{}".utf8)
            return
        }
        var entries: [(key: MapKey, text: String, message: UnsafeRawPointer)] = []
        entries.reserveCapacity(count)
        for index in 0..<count {
            let slot = elements + index * MemoryLayout<UnsafeRawPointer>.stride
            guard let message = slot.load(as: UnsafeRawPointer?.self) else { continue }
            let key = message + Int(keyField.pointee.offset)
            switch keyField.pointee.type {
            case PROTOBUF_C_TYPE_STRING:
                let text = key.load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? ""
                entries.append((.bytes(Array(text.utf8)), text, message))
            case PROTOBUF_C_TYPE_BOOL:
                let flag = key.load(as: Int32.self) != 0
                entries.append((.unsigned(flag ? 1 : 0), flag ? "true" : "false", message))
            case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
                let number = key.load(as: UInt32.self)
                entries.append((.unsigned(UInt64(number)), String(number), message))
            case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
                let number = key.load(as: UInt64.self)
                entries.append((.unsigned(number), String(number), message))
            case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
                let number = key.load(as: Int64.self)
                entries.append((.signed(number), String(number), message))
            default:
                let number = key.load(as: Int32.self)
                entries.append((.signed(Int64(number)), String(number), message))
            }
        }
        // Sorted by key, then by position: the last of equal keys is the one kept.
        let order = entries.indices.sorted {
            entries[$0].key < entries[$1].key || (entries[$0].key == entries[$1].key && $0 < $1)
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        for (position, index) in order.enumerated() {
            if position + 1 < order.count, entries[order[position + 1]].key == entries[index].key { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            ProtoJSONText.appendString(entries[index].text, to: &out)
            out.append(UInt8(ascii: ":"))
            writeValue(valueField, at: entries[index].message + Int(valueField.pointee.offset), anyDepth: anyDepth)
        }
        out.append(UInt8(ascii: "}"))
    }

    private enum MapKey: Comparable {
        case signed(Int64)
        case unsigned(UInt64)
        case bytes([UInt8])

        static func < (lhs: MapKey, rhs: MapKey) -> Bool {
            switch (lhs, rhs) {
            case (.signed(let a), .signed(let b)): a < b
            case (.unsigned(let a), .unsigned(let b)): a < b
            case (.bytes(let a), .bytes(let b)): a.lexicographicallyPrecedes(b)
            default: false  // one map has one key type
            }
        }
    }

    // MARK: Well-known types

    /// `seconds` (field 1, int64) and `nanos` (field 2, int32) of a Timestamp or Duration.
    private static func secondsAndNanos(
        _ message: UnsafePointer<ProtobufCMessage>, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> (Int64, Int32)? {
        guard let seconds = field(1, of: descriptor), let nanos = field(2, of: descriptor) else { return nil }
        let base = UnsafeRawPointer(message)
        return (
            (base + Int(seconds.pointee.offset)).load(as: Int64.self),
            (base + Int(nanos.pointee.offset)).load(as: Int32.self)
        )
    }

    private mutating func writeTimestamp(
        _ message: UnsafePointer<ProtobufCMessage>, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Bool {
        guard let (seconds, nanos) = Self.secondsAndNanos(message, of: descriptor),
            let text = ProtoJSONText.timestamp(seconds: seconds, nanos: nanos)
        else { return false }
        writeQuoted(text)
        return true
    }

    private mutating func writeDuration(
        _ message: UnsafePointer<ProtobufCMessage>, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Bool {
        guard let (seconds, nanos) = Self.secondsAndNanos(message, of: descriptor),
            let text = ProtoJSONText.duration(seconds: seconds, nanos: nanos)
        else { return false }
        writeQuoted(text)
        return true
    }

    /// `{"@type": url, ...the payload's fields}`, or `"value"` for a well-known payload; the documented fallback
    /// when the payload cannot be printed.
    private mutating func writeAny(
        _ message: UnsafePointer<ProtobufCMessage>, of descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        anyDepth: Int
    ) {
        let base = UnsafeRawPointer(message)
        let typeURL =
            Self.field(1, of: descriptor).flatMap {
                (base + Int($0.pointee.offset)).load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) }
            } ?? ""
        let value =
            Self.field(2, of: descriptor).map { (base + Int($0.pointee.offset)).load(as: ProtobufCBinaryData.self) }
            ?? ProtobufCBinaryData(len: 0, data: nil)
        let bytes = UnsafeBufferPointer(start: value.data, count: value.data == nil ? 0 : value.len)
        if typeURL.isEmpty && bytes.isEmpty {
            out.append(contentsOf: "{}".utf8)
            return
        }
        // json_format's rule: the type is the URL's last path segment, whatever its host.
        let typeName = typeURL.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        if anyDepth < Self.maxAnyDepth, let payloadType = schema.messages[typeName],
            let payload = Self.unpack(bytes, as: payloadType)
        {
            defer { protobuf_c_message_free_unpacked(payload, nil) }
            out.append(contentsOf: "{\"@type\":".utf8)
            ProtoJSONText.appendString(typeURL, to: &out)
            switch schema.kinds[payloadType] {
            case .timestamp?, .duration?, .wrapper?, .any?:
                out.append(contentsOf: ",\"value\":".utf8)
                writeMessage(payload, anyDepth: anyDepth + 1)
            case .mapEntry?, nil:
                writeFields(payload, of: payloadType, anyDepth: anyDepth + 1, first: false)
            }
            out.append(UInt8(ascii: "}"))
            return
        }
        out.append(contentsOf: "{\"@type\":".utf8)
        ProtoJSONText.appendString(typeURL, to: &out)
        out.append(contentsOf: ",\"value\":\"".utf8)
        ProtoJSONText.appendBase64(bytes, to: &out)
        out.append(contentsOf: "\"}".utf8)
    }
}
