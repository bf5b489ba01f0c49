/// Decides which metadata keys hold secrets. A key is secret when, lowercased and with everything but
/// letters and digits removed, it contains one of the fragments: `Authorization`, `private_key`,
/// `resume-token`, `jwt` and `p8Path` all match the defaults.
public struct SecretRedaction: Sendable, Hashable {
    /// What replaces a secret value.
    public static let replacement = "[redacted]"

    /// The default fragments: authorization headers, private keys, tokens, JWTs and `.p8` contents.
    public static let defaultFragments = ["authorization", "privatekey", "token", "jwt", "p8"]

    /// Normalised fragments (lowercase letters and digits).
    public let fragments: [String]
    /// The same, as bytes, for the search.
    private let fragmentBytes: [[UInt8]]

    /// A rule matching keys that contain any of `fragments` (normalised the same way as keys).
    public init(fragments: [String] = SecretRedaction.defaultFragments) {
        self.fragments = fragments.map(Self.normalise).filter { !$0.isEmpty }
        fragmentBytes = self.fragments.map { Array($0.utf8) }
    }

    /// Whether a value under `key` must be replaced. Byte work only (no Unicode tables, no Foundation
    /// search): it runs for every metadata key of every log line.
    public func isSecret(key: String) -> Bool {
        let count = key.utf8.count
        guard count <= 256, key.utf8.allSatisfy({ $0 < 0x80 }) else { return contains(Self.normaliseBytes(key)) }
        // An ASCII key normalised on the stack: no allocation.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(count, 1)) { buffer in
            var length = 0
            for byte in key.utf8 {
                guard let kept = Self.normalised(byte) else { continue }
                buffer[length] = kept
                length += 1
            }
            return contains(UnsafeBufferPointer(rebasing: buffer[..<length]))
        }
    }

    /// Whether `normalised` contains one of the fragments.
    private func contains<Bytes: RandomAccessCollection<UInt8>>(_ normalised: Bytes) -> Bool where Bytes.Index == Int {
        fragmentBytes.contains { fragment in
            guard fragment.count <= normalised.count else { return false }
            let first = normalised.startIndex
            return (0...(normalised.count - fragment.count)).contains { offset in
                normalised[(first + offset)..<(first + offset + fragment.count)].elementsEqual(fragment)
            }
        }
    }

    public static func == (lhs: SecretRedaction, rhs: SecretRedaction) -> Bool { lhs.fragments == rhs.fragments }
    public func hash(into hasher: inout Hasher) { hasher.combine(fragments) }

    /// `key` lowercased, with only its ASCII letters and digits: what fragments are matched against. An ASCII
    /// key (every key the code logs) is done byte by byte; any other goes through Unicode lowercasing first,
    /// which can turn a non-ASCII letter into an ASCII one (U+212A KELVIN SIGN into "k").
    private static func normaliseBytes(_ key: String) -> [UInt8] {
        guard key.utf8.allSatisfy({ $0 < 0x80 }) else {
            return Array(
                String(
                    String.UnicodeScalarView(
                        key.lowercased().unicodeScalars.filter {
                            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))
                        })
                ).utf8)
        }
        return key.utf8.compactMap(normalised)
    }

    /// An ASCII letter lowercased or a digit; nil for any other byte.
    private static func normalised(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): byte
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte + 32
        default: nil
        }
    }

    private static func normalise(_ key: String) -> String {
        String(decoding: normaliseBytes(key), as: UTF8.self)
    }
}
