internal import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP digest interface.
package enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// The 32-byte SHA-256 digest of the bytes `input` points at.
    package static func hash(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // The digest fetched once (FetchedDigest), so no implicit per-call fetch; EVP_sha256() otherwise.
        let algorithm = FetchedDigest.sha256?.pointer ?? EVP_sha256()
        let status = digest.withUnsafeMutableBufferPointer { output in
            EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
        }
        // EVP_Digest with a built-in digest fails only when allocation fails.
        precondition(status == 1 && length == 32, "EVP_Digest(SHA-256) failed: out of memory")
        return digest
    }

    /// Colon-separated upper-case hex, the form certificate viewers show (`63:34:3A:...`).
    package static func colonHex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}

/// SHA-256 with a prefix already absorbed: the digest of `prefix ‖ suffix` for many suffixes costs only the
/// suffix. A JWS's signing input is its header (about 4.4 KB for Apple's, the same for every payload of a
/// signing period) and its payload, so a kept header leaves only the payload to hash.
///
/// Owns one `EVP_MD_CTX` (freed in `deinit`) that is never finalized: every digest runs on a copy
/// (`EVP_MD_CTX_copy_ex` only reads the source), so threads use one prefix concurrently, hence `Sendable`.
package final class SHA256Prefix: @unchecked Sendable {
    private let absorbed: OpaquePointer

    /// The state after hashing `prefix`; nil only when OpenSSL cannot allocate or hash.
    package init?(_ prefix: [UInt8]) {
        guard let algorithm = FetchedDigest.sha256?.pointer, let context = EVP_MD_CTX_new() else { return nil }
        let absorbedAll =
            EVP_DigestInit_ex(context, algorithm, nil) == 1
            && prefix.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) == 1 }
        guard absorbedAll else {
            EVP_MD_CTX_free(context)
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        absorbed = context
    }

    deinit { EVP_MD_CTX_free(absorbed) }

    /// SHA-256(prefix ‖ `suffix`); nil only when OpenSSL cannot allocate.
    package func digest(appending suffix: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let finished =
            EVP_MD_CTX_copy_ex(context, absorbed) == 1
            && EVP_DigestUpdate(context, suffix.baseAddress, suffix.count) == 1
            && digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) } == 1
        guard finished, length == 32 else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        return digest
    }
}

/// SHA-1, only where a protocol names content by it (Redis scripts' EVALSHA), never for security.
package enum SHA1 {
    /// The 20-byte SHA-1 digest of `bytes`, in lower-case hex.
    package static func hex(_ bytes: [UInt8]) -> String {
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
