internal import COpenSSL

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) through OpenSSL's one-shot `HMAC()`.
package enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key` (any key length; RFC 2104 §2 hashes long keys).
    package static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let algorithm = FetchedDigest.sha256?.pointer ?? EVP_sha256()
        // An empty key is legal for HMAC; OpenSSL wants a non-null pointer for it, so pass a dummy byte.
        let keyBytes = key.isEmpty ? [0] : key
        let result = keyBytes.withUnsafeBytes { keyBuffer in
            message.withUnsafeBytes { input in
                code.withUnsafeMutableBufferPointer { output in
                    HMAC(
                        algorithm, keyBuffer.baseAddress, Int32(key.count),
                        input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        input.count, output.baseAddress, &length)
                }
            }
        }
        // HMAC with a built-in digest fails only when allocation fails.
        precondition(result != nil && length == 32, "HMAC(SHA-256) failed: out of memory")
        return code
    }

    /// Whether `code` is the authentication code of `message` under `key`, compared in constant time
    /// (`CRYPTO_memcmp`), so a forger learns nothing from how long a rejection took.
    package static func isValid(_ code: [UInt8], key: [UInt8], message: [UInt8]) -> Bool {
        let expected = authenticationCode(key: key, message: message)
        guard code.count == expected.count else { return false }
        return code.withUnsafeBytes { a in
            expected.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
