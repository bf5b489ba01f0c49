import Cryptography
import GatewayCore

/// The envelope every resume token shares (history and followed streams): a body of big-endian fields,
/// then HMAC-SHA256(key, body), all base64url. The body's first byte is its kind's version, so one kind
/// never passes for the other.
struct ResumeTokenEnvelope: Sendable {
    /// The longest token text accepted.
    static let maximumTextBytes = 16_384
    private let key: [UInt8]

    init(key: [UInt8]) { self.key = key }

    /// `body` with its MAC, as token text.
    func seal(_ body: TokenWriter) -> String {
        Base64URL.encode(body.bytes + HMACSHA256.authenticationCode(key: key, message: body.bytes))
    }

    /// The body of `text` when its MAC checks (constant-time) and it holds at least `minimumBodyBytes`;
    /// nil for anything else (too long, not base64url, truncated, altered, another key).
    func open(_ text: String, minimumBodyBytes: Int) -> TokenReader? {
        guard text.utf8.count <= Self.maximumTextBytes, let bytes = Base64URL.decode(text),
            bytes.count >= 32 + minimumBodyBytes
        else { return nil }
        let body = Array(bytes[..<(bytes.count - 32)])
        guard HMACSHA256.isValid(Array(bytes[(bytes.count - 32)...]), key: key, message: body) else { return nil }
        return TokenReader(body)
    }
}

/// Builds a token body front to back: big-endian integers, raw bytes, length-prefixed UTF-8.
struct TokenWriter {
    private(set) var bytes: [UInt8] = []

    mutating func integer(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    mutating func raw(_ more: [UInt8]) { bytes += more }

    /// `text`'s UTF-8 after its length in `lengthWidth` bytes (cut to what that width can count).
    mutating func text(_ text: String, lengthWidth: Int) {
        let limit = lengthWidth >= 8 ? Int.max : (1 << (8 * lengthWidth)) - 1
        let utf8 = Array(text.utf8.prefix(limit))
        integer(UInt64(utf8.count), width: lengthWidth)
        bytes += utf8
    }
}

/// Reads a token body front to back; every read is nil past the end.
struct TokenReader {
    private let bytes: [UInt8]
    private var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func integer(_ width: Int) -> UInt64? {
        bytes(width).map { $0.reduce(0) { $0 << 8 | UInt64($1) } }
    }

    /// UTF-8 text after its length in `lengthWidth` bytes; nil when cut short or not valid UTF-8.
    mutating func text(lengthWidth: Int) -> String? {
        guard let length = integer(lengthWidth), length <= UInt64(Int.max), let utf8 = bytes(Int(length)) else {
            return nil
        }
        return String(validating: utf8, as: UTF8.self)
    }
}
