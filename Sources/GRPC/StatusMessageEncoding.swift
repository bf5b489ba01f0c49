/// Percent-encoding of `grpc-message` (PROTOCOL-HTTP2.md): bytes outside printable ASCII 0x20-0x7E, and
/// '%' itself, become %XX of their UTF-8 bytes.
package enum StatusMessageEncoding {
    static func encode(_ message: String) -> String {
        var needsEncoding = false
        for byte in message.utf8 where byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "%") {
            needsEncoding = true
            break
        }
        guard needsEncoding else { return message }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(message.utf8.count * 3)
        for byte in message.utf8 {
            if byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "%") {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes %XX sequences; malformed sequences are kept as they are, as the spec asks of receivers.
    package static func decode(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
