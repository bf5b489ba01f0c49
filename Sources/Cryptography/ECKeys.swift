internal import COpenSSL

/// The NIST curves App Store data uses: P-256 signs JWS (ES256), P-384 signs Apple's CA certificates.
package enum EllipticCurve: String, Sendable, Hashable, CaseIterable {
    case p256 = "P-256"
    case p384 = "P-384"

    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        }
    }

    /// The OpenSSL group name reported by `EVP_PKEY_get_utf8_string_param(..., "group", ...)`.
    var groupName: String {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        }
    }

    /// Bytes of one coordinate / scalar, so a raw r‖s signature is twice this.
    package var coordinateByteCount: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        }
    }

    /// The digest JOSE pairs with the curve: SHA-256 for ES256, SHA-384 for ES384 (RFC 7518 §3.4).
    var digest: OpaquePointer {
        switch self {
        case .p256: EVP_sha256()
        case .p384: EVP_sha384()
        }
    }

    /// The curve of an EC `EVP_PKEY`, or nil for any other key type or curve.
    init?(of key: OpaquePointer) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &buffer, buffer.count, &length) == 1 else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        let name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard let curve = Self.allCases.first(where: { $0.groupName == name }) else { return nil }
        self = curve
    }
}

/// An elliptic-curve private key on P-256 or P-384 (with its public half).
package final class ECPrivateKey: Sendable {
    let key: EVPKey
    /// The key's curve.
    package let curve: EllipticCurve

    /// Generates a fresh key on `curve` from OpenSSL's CSPRNG.
    package init(generatingOn curve: EllipticCurve) throws(CryptographyError) {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw CryptographyError(.internalFailure, "EVP_PKEY_CTX_new_id(EC) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, curve.nid) == 1
        else { throw CryptographyError(.internalFailure, "EC key generation setup failed") }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen(context, &generated) == 1, let generated else {
            throw CryptographyError(.internalFailure, "EVP_PKEY_keygen failed")
        }
        self.key = EVPKey(takingOwnershipOf: generated)
        self.curve = curve
    }

    /// Loads an unencrypted PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`), such as Apple's `.p8`.
    package init(pkcs8PEM pem: String) throws(CryptographyError) {
        let bio = try MemoryBIO(reading: Array(pem.utf8))
        // The password callback refuses, so an encrypted key fails instead of prompting on a terminal.
        guard let loaded = PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            throw CryptographyError(.invalidKey, "not an unencrypted PEM private key")
        }
        let owner = EVPKey(takingOwnershipOf: loaded)
        guard let curve = EllipticCurve(of: loaded) else {
            throw CryptographyError(.unsupportedKey, "the private key is not an EC key on P-256 or P-384")
        }
        self.key = owner
        self.curve = curve
    }

    /// The matching public key.
    package var publicKey: ECPublicKey {
        get throws(CryptographyError) {
            let der = try publicKeyDER()
            return try ECPublicKey(derEncoded: der)
        }
    }

    /// The private key as PKCS#8 PEM (unencrypted), the `.p8` format.
    package func pkcs8PEM() throws(CryptographyError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CryptographyError(.internalFailure, "PEM_write_bio_PKCS8PrivateKey failed")
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// The public key as DER SubjectPublicKeyInfo.
    package func publicKeyDER() throws(CryptographyError) -> [UInt8] {
        try ECPublicKey.subjectPublicKeyInfo(of: key.pointer)
    }

    /// Signs `message` with ECDSA and the curve's JOSE digest (P-256: ES256 / SHA-256, P-384: ES384 /
    /// SHA-384), returning the raw JOSE form r‖s (RFC 7518 §3.4), 64 bytes for P-256.
    package func signature(for message: [UInt8]) throws(CryptographyError) -> [UInt8] {
        let der = try ECDSA.signDER(message, key: key.pointer, digest: curve.digest)
        guard let raw = ECDSA.rawSignature(fromDER: der, coordinateByteCount: curve.coordinateByteCount) else {
            throw CryptographyError(.internalFailure, "OpenSSL produced an unparseable ECDSA signature")
        }
        return raw
    }
}

/// An elliptic-curve public key on P-256 or P-384.
package final class ECPublicKey: Sendable, Equatable {
    let key: EVPKey
    /// The key's curve.
    package let curve: EllipticCurve
    /// Verification prepared once for this key; nil only if OpenSSL could not prepare it.
    private let verification: ECVerificationContext?

    /// Wraps an `EVP_PKEY` the caller hands over (its reference becomes this object's).
    init(takingOwnershipOf pointer: OpaquePointer) throws(CryptographyError) {
        let owner = EVPKey(takingOwnershipOf: pointer)
        guard let curve = EllipticCurve(of: pointer) else {
            throw CryptographyError(.unsupportedKey, "the public key is not an EC key on P-256 or P-384")
        }
        self.key = owner
        self.curve = curve
        self.verification = ECVerificationContext(key: pointer, curve: curve)
    }

    /// Parses a DER SubjectPublicKeyInfo; trailing bytes are rejected.
    package convenience init(derEncoded der: [UInt8]) throws(CryptographyError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let key = d2i_PUBKEY(nil, &cursor, buffer.count) else { return nil }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let parsed else { throw CryptographyError(.invalidKey, "not a DER SubjectPublicKeyInfo") }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses a PEM public key (`-----BEGIN PUBLIC KEY-----`).
    package convenience init(pem: String) throws(CryptographyError) {
        let bio = try MemoryBIO(reading: Array(pem.utf8))
        guard let parsed = PEM_read_bio_PUBKEY(bio.pointer, nil, nil, nil) else {
            throw CryptographyError(.invalidKey, "not a PEM public key")
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// The key as DER SubjectPublicKeyInfo.
    package func derRepresentation() throws(CryptographyError) -> [UInt8] {
        try Self.subjectPublicKeyInfo(of: key.pointer)
    }

    /// The key as PEM (`-----BEGIN PUBLIC KEY-----`).
    package func pemRepresentation() throws(CryptographyError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, key.pointer) == 1 else {
            throw CryptographyError(.internalFailure, "PEM_write_bio_PUBKEY failed")
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// Whether `signature`, a raw JOSE r‖s of exactly twice the coordinate size, signs `message` under
    /// this key with the curve's digest (ES256 for P-256). DER-encoded signatures are rejected.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 2 * curve.coordinateByteCount,
            let der = ECDSA.derSignatureDirect(fromRaw: signature)
        else { return false }
        guard let verification else {
            return ECDSA.verifyDER(der, message: message, key: key.pointer, digest: curve.digest)
        }
        return verification.verify(der: der, message: message)
    }

    /// Whether `signature` (raw JOSE r‖s) signs the message whose digest, with the curve's algorithm
    /// (SHA-256 for P-256), is `digest`: for callers that hashed the message in parts (`SHA256Prefix`).
    package func isValidSignature(_ signature: [UInt8], forDigest digest: [UInt8]) -> Bool {
        guard signature.count == 2 * curve.coordinateByteCount,
            let der = ECDSA.derSignatureDirect(fromRaw: signature),
            let verification = verification ?? ECVerificationContext(key: key.pointer, curve: curve)
        else { return false }
        return digest.withUnsafeBufferPointer { verification.verify(der: der, digest: $0) }
    }

    package static func == (lhs: ECPublicKey, rhs: ECPublicKey) -> Bool {
        EVP_PKEY_eq(lhs.key.pointer, rhs.key.pointer) == 1
    }

    static func subjectPublicKeyInfo(of key: OpaquePointer) throws(CryptographyError) -> [UInt8] {
        guard let der = derEncode({ i2d_PUBKEY(key, $0) }) else {
            throw CryptographyError(.internalFailure, "i2d_PUBKEY failed")
        }
        return der
    }
}
