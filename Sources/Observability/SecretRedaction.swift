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
    /// The same, as bytes, one after the other, for the search; `fragmentEnds[i]` is where fragment i ends.
    private let fragmentBytes: [UInt8]
    private let fragmentEnds: [Int]
    /// The bytes fragments start with.
    private let firstBytes: ByteSet
    /// The `pairHash` of each fragment's first two bytes: a key in which no two adjacent bytes hash to one
    /// of these contains no fragment, without searching it.
    private let openings: ByteSet
    /// Whether a fragment is one byte long (`openings` cannot rule a key out then).
    private let hasOneByteFragment: Bool

    /// A rule matching keys that contain any of `fragments` (normalised the same way as keys).
    public init(fragments: [String] = SecretRedaction.defaultFragments) {
        self.fragments = fragments.map(Self.normalise).filter { !$0.isEmpty }
        fragmentBytes = self.fragments.flatMap(\.utf8)
        var end = 0
        fragmentEnds = self.fragments.map { fragment in
            end += fragment.utf8.count
            return end
        }
        firstBytes = ByteSet(self.fragments.compactMap(\.utf8.first))
        openings = ByteSet(
            self.fragments.map { Array($0.utf8) }.filter { $0.count > 1 }.map { Self.pairHash($0[0], $0[1]) })
        hasOneByteFragment = self.fragments.contains { $0.utf8.count == 1 }
    }

    /// Whether a value under `key` must be replaced. Byte work only (no Unicode tables, no Foundation
    /// search, no allocation for an ASCII key): it runs for every metadata key of every log line.
    public func isSecret(key: String) -> Bool {
        let asciiAnswer: Bool?? = key.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard bytes.count <= 256 else { return nil }
            // An ASCII key normalised on the stack, in the same pass that checks it is ASCII and looks for
            // two adjacent bytes a fragment could start with.
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(bytes.count, 1)) { buffer in
                var length = 0
                var previous: UInt8 = 0
                var opening = hasOneByteFragment
                for byte in bytes {
                    guard byte < 0x80 else { return nil }
                    guard let kept = Self.normalised(byte) else { continue }
                    buffer[length] = kept
                    length += 1
                    if openings.contains(Self.pairHash(previous, kept)) { opening = true }
                    previous = kept
                }
                return opening && contains(UnsafeBufferPointer(rebasing: buffer[..<length]))
            }
        }
        if let asciiAnswer, let answer = asciiAnswer { return answer }
        return Self.normaliseBytes(key).withUnsafeBufferPointer { contains($0) }
    }

    /// Whether `normalised` contains one of the fragments: a plain search (keys and fragments are short)
    /// that only looks further at a byte some fragment starts with.
    private func contains(_ normalised: UnsafeBufferPointer<UInt8>) -> Bool {
        fragmentBytes.withUnsafeBufferPointer { all in
            for offset in normalised.indices where firstBytes.contains(normalised[offset]) {
                let rest = normalised.count - offset
                var start = 0
                for end in fragmentEnds {
                    defer { start = end }
                    guard end - start <= rest, all[start] == normalised[offset] else { continue }
                    var matched = 1
                    while start + matched < end && normalised[offset + matched] == all[start + matched] { matched += 1 }
                    if start + matched == end { return true }
                }
            }
            return false
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

    /// Two adjacent bytes hashed to one byte (for `openings`).
    private static func pairHash(_ first: UInt8, _ second: UInt8) -> UInt8 { (first &* 67) ^ second }

    /// An ASCII letter lowercased or a digit; nil for any other byte.
    private static func normalised(_ byte: UInt8) -> UInt8? {
        let lowercased = byte | 0x20  // an ASCII letter in lowercase; for other bytes only the test below
        if lowercased &- UInt8(ascii: "a") < 26 { return lowercased }
        return byte &- UInt8(ascii: "0") < 10 ? byte : nil
    }

    private static func normalise(_ key: String) -> String {
        String(decoding: normaliseBytes(key), as: UTF8.self)
    }
}

/// A set of bytes as a 256-bit mask.
private struct ByteSet: Sendable {
    private var bits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    init(_ bytes: [UInt8]) {
        for byte in bytes {
            let bit = UInt64(1) << (byte & 63)
            switch byte >> 6 {
            case 0: bits.0 |= bit
            case 1: bits.1 |= bit
            case 2: bits.2 |= bit
            default: bits.3 |= bit
            }
        }
    }

    func contains(_ byte: UInt8) -> Bool {
        // A load, not a switch on the word: a branch per byte would be mispredicted.
        let word = withUnsafeBytes(of: bits) { $0.load(fromByteOffset: Int(byte >> 6) &* 8, as: UInt64.self) }
        return (word >> (byte & 63)) & 1 != 0
    }
}
