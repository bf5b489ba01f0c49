/// Percent-encoding of URL components (RFC 3986 §2.1): every byte but the unreserved set
/// `A-Z a-z 0-9 - . _ ~` becomes `%XX` with uppercase hex, over the UTF-8 bytes.
public enum PercentEncoding {
    /// `value` percent-encoded for use as a query value or a path segment.
    public static func encode(_ value: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(0x25)
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: true
        default: false
        }
    }
}
