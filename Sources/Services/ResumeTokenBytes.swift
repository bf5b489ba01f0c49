import AppStoreDomain
import Cryptography
import GatewayFoundation

/// The envelope every resume token shares (history and followed streams): a body of big-endian fields,
/// then HMAC-SHA256(key, body), all base64url. The body's first byte is its kind's version, so one kind
/// never passes for the other; its next eight are when the token was issued (UNIX ms), so a token older than
/// `maxAge` is refused. The ring's first key seals, any of its keys opens.
struct ResumeTokenEnvelope: Sendable {
    /// The longest token text accepted.
    static let maximumTextBytes = 16_384
    private let ring: ResumeTokenKeyRing
    /// How long after it was issued a token is accepted.
    let maxAge: Duration

    init(ring: ResumeTokenKeyRing, maxAge: Duration) {
        self.ring = ring
        self.maxAge = maxAge
    }

    /// `body` with its MAC under the ring's signing key, as token text.
    func seal(_ body: TokenWriter) -> String {
        let key = ring.keys[0]
        return Base64URL.encode(body.bytes + HMACSHA256.authenticationCode(key: key, message: body.bytes))
    }

    /// The body of `text` when its MAC checks (constant-time) under one of the ring's keys and it holds at
    /// least `minimumBodyBytes`; nil for anything else (too long, not base64url, truncated, altered, a key
    /// not in the ring).
    func open(_ text: String, minimumBodyBytes: Int) -> TokenReader? {
        guard text.utf8.count <= Self.maximumTextBytes, let bytes = Base64URL.decode(text),
            bytes.count >= 32 + minimumBodyBytes
        else { return nil }
        let body = Array(bytes[..<(bytes.count - 32)])
        let code = Array(bytes[(bytes.count - 32)...])
        guard ring.keys.contains(where: { HMACSHA256.isValid(code, key: $0, message: body) }) else { return nil }
        return TokenReader(body)
    }

    /// Throws RESUME_TOKEN_EXPIRED when a genuine token issued at `issuedAt` (UNIX ms) is older than `maxAge`
    /// at `now`. `restartFrom`: the signed date of the event it follows, for the caller's new stream.
    func checkAge(issuedAt: Int64, now: WallTime, restartFrom: Int64?) throws(GatewayError) {
        guard now - WallTime(millisecondsSince1970: issuedAt) <= maxAge else {
            throw .resumeTokenExpired(
                issuedAt: issuedAt, maxAgeMilliseconds: maxAge.wholeMilliseconds, restartFrom: restartFrom)
        }
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
