import GatewayCore
import HTTP2

/// The trailer fields that carry a call's status (PROTOCOL-HTTP2.md "Trailers").
enum StatusTrailers {
    /// `:status 200` and the gRPC content type: the head of every gRPC response.
    static let responseHead = HeaderBlock([(":status", "200"), ("content-type", "application/grpc")])
    /// `grpc-status: 0` alone, the trailer of nearly every successful call.
    static let ok = HeaderBlock([("grpc-status", "0")])

    /// The trailers for `status`, prepared once when it is a plain OK.
    static func block(for status: RPCStatus) -> HeaderBlock {
        if status.code == .ok && status.message.isEmpty { return ok }
        return HeaderBlock(fields(for: status))
    }

    /// A Trailers-Only response (a head that is the whole response) for `status`.
    static func trailersOnly(for status: RPCStatus) -> HeaderBlock {
        HeaderBlock(responseHead.fieldList + fields(for: status))
    }

    static func fields(for unbounded: RPCStatus) -> [(name: String, value: String)] {
        let status = TrailerBounds.bounded(unbounded)  // every status must fit the client's header limits
        var fields = [(name: "grpc-status", value: String(status.code.rawValue))]
        if !status.message.isEmpty {
            fields.append(("grpc-message", StatusMessageEncoding.encode(status.message)))
        }
        if status.code != .ok, let details = StatusDetailsEncoding.encode(status) {
            // -bin metadata is base64; emitted unpadded, as the spec recommends.
            fields.append(("grpc-status-details-bin", Base64.encode(details, padded: false)))
        }
        return fields
    }
}

/// Standard base64 (RFC 4648 §4), for `-bin` metadata.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in stride(from: 18, through: 0, by: -6) { out.append(alphabet[Int(value >> UInt32(shift) & 63)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            var value = UInt32(bytes[index]) << 16
            if rest == 2 { value |= UInt32(bytes[index + 1]) << 8 }
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if rest == 2 { out.append(alphabet[Int(value >> 6 & 63)]) }
            if padded { out.append(contentsOf: Array(repeating: UInt8(ascii: "="), count: 3 - rest)) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded or unpadded standard base64; nil on any other character.
    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "/"): values.append(63)
            case UInt8(ascii: "="): continue
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            var value: UInt32 = 0
            for (offset, v) in chunk.enumerated() { value |= UInt32(v) << UInt32(18 - 6 * offset) }
            out.append(UInt8(value >> 16 & 0xFF))
            if chunk.count > 2 { out.append(UInt8(value >> 8 & 0xFF)) }
            if chunk.count > 3 { out.append(UInt8(value & 0xFF)) }
            index += 4
        }
        return out
    }
}
