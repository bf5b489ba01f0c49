/// base64url without padding (RFC 4648 §5), the form of every JWS and JWT segment (RFC 7515 §2): a name for
/// `Base64` with `.urlSafeUnpadded`, as strict (padding, other alphabets and leftover bits are refused).
public enum Base64URL {
    /// Encodes `bytes` with the URL-safe alphabet and no `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64.encode(bytes, variant: .urlSafeUnpadded)
    }

    /// Decodes unpadded base64url; nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64.decode(text, variant: .urlSafeUnpadded)
    }
}
