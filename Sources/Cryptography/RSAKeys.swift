internal import COpenSSL

/// An RSA public key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256) verification, as JWKS publish them.
/// Modulus sizes are bounded (2048 to 4096 bits) so a hostile key cannot make verification expensive.
public final class RSAPublicKey: Sendable {
    let key: EVPKey
    /// The modulus size in bytes (the size of every valid signature).
    public let modulusByteCount: Int

    /// Allowed modulus sizes, in bits.
    public static let allowedBits = 2048...4096

    /// A key from its big-endian modulus `n` and public exponent `e` (a JWK's decoded "n" and "e").
    public init(modulus: [UInt8], exponent: [UInt8]) throws(CryptographyError) {
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
        let der = DER.sequence(
            DER.sequence(DER.objectIdentifier([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) + [0x05, 0x00])
                + DER.bitString(DER.sequence(DER.unsignedInteger(n) + DER.unsignedInteger(e))))
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptographyError(.invalidKey, "OpenSSL refused the RSA public key") }
        key = EVPKey(takingOwnershipOf: parsed)
        modulusByteCount = n.count
    }

    /// Wraps a key the caller hands over.
    init(takingOwnershipOf pointer: OpaquePointer, modulusByteCount: Int) {
        key = EVPKey(takingOwnershipOf: pointer)
        self.modulusByteCount = modulusByteCount
    }

    /// Whether `signature` is a valid RS256 signature of `message` under this key.
    public func isValidRS256Signature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
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
public final class RSAPrivateKey: Sendable {
    let key: EVPKey
    public let bits: Int

    /// Generates a key of `bits` bits with exponent 65537.
    public init(generatingBits bits: Int = 2048) throws(CryptographyError) {
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
    public var modulus: [UInt8] { parameter("n") }
    /// The public exponent, big-endian.
    public var exponent: [UInt8] { parameter("e") }

    /// The public half.
    public func publicKey() throws(CryptographyError) -> RSAPublicKey {
        try RSAPublicKey(modulus: modulus, exponent: exponent)
    }

    /// An RS256 signature of `message`.
    public func rs256Signature(for message: [UInt8]) throws(CryptographyError) -> [UInt8] {
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
    public convenience init(p256X x: [UInt8], y: [UInt8]) throws(CryptographyError) {
        guard x.count == 32, y.count == 32 else {
            throw CryptographyError(.invalidKey, "P-256 coordinates must be 32 bytes each")
        }
        // SubjectPublicKeyInfo { id-ecPublicKey, prime256v1 } with the uncompressed point.
        let prefix: [UInt8] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
            0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ]
        try self.init(derEncoded: prefix + x + y)
    }

    /// The affine coordinates (x, y) of a P-256 key, 32 bytes each (for publishing it as a JWK).
    public var p256Coordinates: (x: [UInt8], y: [UInt8])? {
        guard curve == .p256, let der = try? derRepresentation(), der.count >= 65 else { return nil }
        let point = Array(der.suffix(64))
        return (Array(point.prefix(32)), Array(point.suffix(32)))
    }
}

/// The few DER encodings a SubjectPublicKeyInfo needs.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func sequence(_ content: [UInt8]) -> [UInt8] { [0x30] + length(content.count) + content }
    static func objectIdentifier(_ content: [UInt8]) -> [UInt8] { [0x06] + length(content.count) + content }
    static func bitString(_ content: [UInt8]) -> [UInt8] { [0x03] + length(content.count + 1) + [0x00] + content }

    /// A non-negative INTEGER from big-endian magnitude bytes without leading zeros.
    static func unsignedInteger(_ magnitude: [UInt8]) -> [UInt8] {
        let body = magnitude.isEmpty ? [0] : (magnitude[0] & 0x80 != 0 ? [0] + magnitude : magnitude)
        return [0x02] + length(body.count) + body
    }
}
