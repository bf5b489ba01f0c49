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

    /// A rule matching keys that contain any of `fragments` (normalised the same way as keys).
    public init(fragments: [String] = SecretRedaction.defaultFragments) {
        self.fragments = fragments.map(Self.normalise).filter { !$0.isEmpty }
    }

    /// Whether a value under `key` must be replaced.
    public func isSecret(key: String) -> Bool {
        let normalised = Self.normalise(key)
        return fragments.contains { normalised.contains($0) }
    }

    private static func normalise(_ key: String) -> String {
        String(
            String.UnicodeScalarView(
                key.lowercased().unicodeScalars.filter {
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))
                }))
    }
}
