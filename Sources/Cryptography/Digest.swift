internal import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP digest interface.
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // The digest fetched once (FetchedDigest), so no implicit per-call fetch; EVP_sha256() otherwise.
        let algorithm = FetchedDigest.sha256?.pointer ?? EVP_sha256()
        let status = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            }
        }
        // EVP_Digest with a built-in digest fails only when allocation fails.
        precondition(status == 1 && length == 32, "EVP_Digest(SHA-256) failed: out of memory")
        return digest
    }

    /// Colon-separated upper-case hex, the form certificate viewers show (`63:34:3A:...`).
    public static func colonHex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}

/// SHA-1, only where a protocol names content by it (Redis scripts' EVALSHA), never for security.
public enum SHA1 {
    /// The 20-byte SHA-1 digest of `bytes`, in lower-case hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let status = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha1(), nil)
            }
        }
        precondition(status == 1 && length == 20, "EVP_Digest(SHA-1) failed: out of memory")
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
