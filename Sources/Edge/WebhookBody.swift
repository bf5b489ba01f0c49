import Foundation

/// The body Apple posts to the webhook, `{"signedPayload": "<JWS>"}`, read without a general JSON parser:
/// one flat object whose values are strings, numbers, booleans or null, no nesting (so a hostile body can
/// neither recurse nor allocate beyond its own size). Anything else is not a notification.
enum WebhookBody {
    /// The `signedPayload` string, or nil when `bytes` is not such an object or has no (or a repeated) one.
    static func signedPayload(_ bytes: [UInt8]) -> String? {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        var payload: String?
        reader.skipSpace()
        if reader.take(UInt8(ascii: "}")) { return nil }
        while true {
            reader.skipSpace()
            guard let name = reader.string() else { return nil }
            reader.skipSpace()
            guard reader.take(UInt8(ascii: ":")) else { return nil }
            reader.skipSpace()
            if name == "signedPayload" {
                guard payload == nil, let value = reader.string() else { return nil }
                payload = value
            } else {
                guard reader.scalar() else { return nil }
            }
            reader.skipSpace()
            if reader.take(UInt8(ascii: ",")) { continue }
            guard reader.take(UInt8(ascii: "}")) else { return nil }
            reader.skipSpace()
            guard reader.atEnd else { return nil }
            return payload
        }
    }

    /// Where the run of plain string characters (no quote, backslash or control character) starting at `start`
    /// ends.
    static func plainRunEnd(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = buffer.baseAddress, start < buffer.count else { return start }
        func find(_ byte: UInt8, before end: Int) -> Int? {
            guard end > start, let found = memchr(base + start, Int32(byte), end - start) else {
                return nil
            }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        var end = find(UInt8(ascii: "\""), before: buffer.count) ?? buffer.count
        end = find(UInt8(ascii: "\\"), before: end) ?? end
        var lowest: UInt8 = 0xFF
        for index in start..<end { lowest = min(lowest, buffer[index]) }
        guard lowest < 0x20 else { return end }
        var index = start
        while buffer[index] >= 0x20 { index += 1 }
        return index
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard offset < bytes.count, bytes[offset] == byte else { return false }
            offset += 1
            return true
        }

        /// A JSON string (escapes decoded, valid UTF-8 only).
        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var out: [UInt8] = []
            while offset < bytes.count {
                // A run of plain characters is found without a branch per byte and copied at once (a JWS is one
                // ~10 kB run): the next quote and backslash by libc's vectorised memchr, then the run's lowest
                // byte (a loop the compiler vectorises) tells whether a control character ends it earlier.
                let start = offset
                let end = bytes.withUnsafeBufferPointer { buffer in WebhookBody.plainRunEnd(buffer, from: start) }
                if end > start {
                    if out.isEmpty, end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                        offset = end + 1
                        return String(validating: bytes[start..<end], as: UTF8.self)
                    }
                    out.append(contentsOf: bytes[start..<end])
                    offset = end
                    guard offset < bytes.count else { return nil }
                }
                let byte = bytes[offset]
                offset += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard offset < bytes.count else { return nil }
                    let escape = bytes[offset]
                    offset += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        // A JWS is ASCII: \u escapes are accepted for ASCII only.
                        guard offset + 4 <= bytes.count,
                            let code = UInt8(String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self), radix: 16),
                            code < 0x80
                        else { return nil }
                        offset += 4
                        out.append(code)
                    default: return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    out.append(byte)
                }
            }
            return nil
        }

        /// A string, number, true, false or null (skipped).
        mutating func scalar() -> Bool {
            guard offset < bytes.count else { return false }
            switch bytes[offset] {
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default:
                let start = offset
                while offset < bytes.count, "+-.0123456789eE".utf8.contains(bytes[offset]) { offset += 1 }
                return offset > start
            }
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard offset + expected.count <= bytes.count, Array(bytes[offset..<(offset + expected.count)]) == expected
            else { return false }
            offset += expected.count
            return true
        }
    }
}
