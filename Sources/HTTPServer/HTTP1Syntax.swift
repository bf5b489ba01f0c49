/// The byte classes of HTTP/1.1's grammar (RFC 9110 §5.6, RFC 9112 §5) the request parser checks against.
enum HTTP1Syntax {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")

    /// tchar: the bytes of a token (method, header name): visible ASCII but delimiters.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// field-vchar, SP or HTAB: visible ASCII and obs-text (0x80–0xFF); no control character, no DEL.
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= space && byte != 0x7F)
    }

    /// A byte of a request target: visible ASCII (RFC 3986 characters and what clients leave unescaped).
    static func isTargetByte(_ byte: UInt8) -> Bool {
        byte > space && byte < 0x7F
    }

    /// A byte of a `Host` value (uri-host [":" port]): visible ASCII but the delimiters that end an authority,
    /// and no comma (two hosts folded into one field).
    static func isHostByte(_ byte: UInt8) -> Bool {
        isTargetByte(byte) && !"/?#@,".utf8.contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// ASCII lowercase; other bytes unchanged.
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// Without leading and trailing SP and HTAB (OWS).
    static func trimmingWhitespace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == space || first == tab { slice.removeFirst() }
        while let last = slice.last, last == space || last == tab { slice.removeLast() }
        return slice
    }

    /// The elements of a comma-separated list value, trimmed and lowercased; empty elements dropped.
    static func lowercasedListElements(_ bytes: ArraySlice<UInt8>) -> [String] {
        bytes.split(separator: UInt8(ascii: ",")).compactMap { element in
            let trimmed = trimmingWhitespace(element)
            return trimmed.isEmpty ? nil : String(decoding: trimmed.map(lowercased), as: UTF8.self)
        }
    }
}
