import Cryptography
import Foundation
import GatewayFoundation

/// Where the next notification-history page starts, and for which request.
struct PaginationCursor: Sendable, Equatable {
    var issuedAt: Int64
    var offset: Int
    var fingerprint: String
}

/// Opaque pagination tokens: the cursor and a keyed SHA-256 tag, base64url. Stateless, so a restart
/// keeps tokens valid; any edit makes the tag fail (→ 4000014).
struct PaginationTokenCodec: Sendable {
    let secret: String

    func encode(_ cursor: PaginationCursor) -> String {
        let body = "\(cursor.issuedAt).\(cursor.offset).\(cursor.fingerprint)"
        return Base64URL.encode(Array((body + "." + tag(body)).utf8))
    }

    func decode(_ token: String) throws(AppleRejection) -> PaginationCursor {
        let invalid = AppleRejection(4_000_014, "Invalid pagination token.")
        guard let bytes = Base64URL.decode(token) else { throw invalid }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: ".").map(String.init)
        guard parts.count == 4, tag(parts[0...2].joined(separator: ".")) == parts[3],
            let issuedAt = Int64(parts[0]), let offset = Int(parts[1]), offset >= 0
        else { throw invalid }
        return PaginationCursor(issuedAt: issuedAt, offset: offset, fingerprint: parts[2])
    }

    private func tag(_ body: String) -> String { Self.digest(secret + "|" + body) }

    /// The first 12 bytes of SHA-256, hex.
    static func digest(_ text: String) -> String {
        SHA256.hash(Array(text.utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
    }
}
