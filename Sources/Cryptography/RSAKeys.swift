internal import COpenSSL

/// An RSA public key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256) verification, as JWKS publish them.
/// Modulus sizes are bounded (2048 to 4096 bits) so a hostile key cannot make verification expensive.
package final class RSAPublicKey: Sendable {
    let key: EVPKey
    /// The modulus size in bytes (the size of every valid signature).
    package let modulusByteCount: Int

    /// Allowed modulus sizes, in bits.
    package static let allowedBits = 2048...4096

    /// A key from its big-endian modulus `n` and public exponent `e` (a JWK's decoded "n" and "e").
    package init(modulus: [UInt8], exponent: [UInt8]) throws(CryptographyError) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        let bits = n.count * 8 - (n.first.map { $0.leadingZeroBitCount } ?? 8)
        guard Self.allowedBits.contains(bits) else {
            throw CryptographyError(.unsupportedKey, "an RSA modulus of \(bits) bits (2048 to 4096 accepted)")
        }
        // 3 or more, odd, at most 32 bits wide (65537 in practice).
        guard let last = e.last, e.count <= 4, last & 1 == 1, e != [1] else {
            throw CryptographyError(.invalidKey, "an RSA public exponent must be odd, more than 1 and at most 32 bits")
        }
        let made = n.withUnsafeBufferPointer { modulus in
            e.withUnsafeBufferPointer {
                copenssl_rsa_public_key(modulus.baseAddress, modulus.count, $0.baseAddress, $0.count)
            }
        }
        guard let made else { throw CryptographyError(.invalidKey, "OpenSSL refused the RSA public key") }
        key = EVPKey(takingOwnershipOf: made)
        modulusByteCount = n.count
    }

    /// Whether `signature` is a valid RS256 signature of `message` under this key.
    package func isValidRS256Signature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == modulusByteCount, let digest = FetchedDigest.sha256 else { return false }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest.pointer, nil, key.pointer) == 1 else {
            _ = CryptographyError.drainErrorQueue()
            return false
        }
        let result = signature.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_DigestVerify(
                    context, signatureBytes.baseAddress, signatureBytes.count, messageBytes.baseAddress,
                    messageBytes.count)
            }
        }
        if result != 1 { _ = CryptographyError.drainErrorQueue() }
        return result == 1
    }
}

/// An RSA private key, for tests and tools that mint RS256 tokens (the gateway itself only verifies).
package final class RSAPrivateKey: Sendable {
    let key: EVPKey
    package let bits: Int

    /// Generates a key of `bits` bits with exponent 65537.
    package init(generatingBits bits: Int = 2048) throws(CryptographyError) {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else {
            throw CryptographyError(.internalFailure, "EVP_PKEY_CTX_new_id(RSA) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
            throw CryptographyError(.internalFailure, "RSA key generation setup failed")
        }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen(context, &generated) == 1, let generated else {
            throw CryptographyError(.internalFailure, "EVP_PKEY_keygen(RSA) failed")
        }
        key = EVPKey(takingOwnershipOf: generated)
        self.bits = bits
    }

    /// The public modulus, big-endian.
    package var modulus: [UInt8] { parameter("n") }
    /// The public exponent, big-endian.
    package var exponent: [UInt8] { parameter("e") }

    /// The public half.
    package func publicKey() throws(CryptographyError) -> RSAPublicKey {
        try RSAPublicKey(modulus: modulus, exponent: exponent)
    }

    /// An RS256 signature of `message`.
    package func rs256Signature(for message: [UInt8]) throws(CryptographyError) -> [UInt8] {
        guard let digest = FetchedDigest.sha256, let context = EVP_MD_CTX_new() else {
            throw CryptographyError(.internalFailure, "EVP_MD_CTX_new failed")
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest.pointer, nil, key.pointer) == 1 else {
            throw CryptographyError(.internalFailure, "EVP_DigestSignInit failed")
        }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1
        else { throw CryptographyError(.internalFailure, "EVP_DigestSign (size) failed") }
        var signature = [UInt8](repeating: 0, count: length)
        let status = signature.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer {
                EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count)
            }
        }
        guard status == 1 else { throw CryptographyError(.internalFailure, "EVP_DigestSign failed") }
        return Array(signature.prefix(length))
    }

    private func parameter(_ name: String) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, name, &number) == 1, let number else { return [] }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int(copenssl_BN_num_bytes(number)))
        _ = bytes.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        return bytes
    }
}

extension ECPublicKey {
    /// A P-256 key from its affine coordinates (a JWK's decoded "x" and "y", 32 bytes each); OpenSSL checks
    /// that the point is on the curve.
    package convenience init(p256X x: [UInt8], y: [UInt8]) throws(CryptographyError) {
        guard x.count == 32, y.count == 32 else {
            throw CryptographyError(.invalidKey, "P-256 coordinates must be 32 bytes each")
        }
        let point = [0x04] + x + y
        let made = point.withUnsafeBufferPointer { copenssl_ec_public_key("prime256v1", $0.baseAddress, $0.count) }
        guard let made else { throw CryptographyError(.invalidKey, "OpenSSL refused the P-256 point") }
        try self.init(takingOwnershipOf: made)
    }

    /// The affine coordinates (x, y) of a P-256 key, 32 bytes each (for publishing it as a JWK).
    package var p256Coordinates: (x: [UInt8], y: [UInt8])? {
        guard curve == .p256 else { return nil }
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        let status = point.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(key.pointer, "encoded-pub-key", $0.baseAddress, $0.count, &length)
        }
        guard status == 1, length == 65, point[0] == 0x04 else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        return (Array(point[1..<33]), Array(point[33..<65]))
    }
}
