internal import COpenSSL

/// ECDSA through EVP_DigestSign / EVP_DigestVerify, and the DER ⇄ raw r‖s conversions JOSE needs.
enum ECDSA {
    /// Signs `message` (hashed with `digest`) and returns OpenSSL's DER ECDSA-Sig-Value.
    static func signDER(_ message: [UInt8], key: OpaquePointer, digest: OpaquePointer) throws(CryptographyError)
        -> [UInt8]
    {
        guard let context = EVP_MD_CTX_new() else {
            throw CryptographyError(.internalFailure, "EVP_MD_CTX_new failed")
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest, nil, key) == 1 else {
            throw CryptographyError(.internalFailure, "EVP_DigestSignInit failed")
        }
        var length = 0
        let sized = message.withUnsafeBufferPointer { EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }
        guard sized == 1, length > 0 else { throw CryptographyError(.internalFailure, "EVP_DigestSign (size) failed") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer {
                EVP_DigestSign(context, $0.baseAddress, &length, input.baseAddress, input.count)
            }
        }
        guard signed == 1 else { throw CryptographyError(.internalFailure, "EVP_DigestSign failed") }
        return Array(signature.prefix(length))
    }

    /// Verifies a DER signature. Returns false for a wrong signature and for any OpenSSL failure, whose
    /// queue is cleared so it cannot be mistaken for the cause of a later error.
    static func verifyDER(_ der: [UInt8], message: [UInt8], key: OpaquePointer, digest: OpaquePointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else {
            _ = CryptographyError.drainErrorQueue()
            return false
        }
        let result = der.withUnsafeBufferPointer { signature in
            message.withUnsafeBufferPointer { input in
                EVP_DigestVerify(context, signature.baseAddress, signature.count, input.baseAddress, input.count)
            }
        }
        if result != 1 { _ = CryptographyError.drainErrorQueue() }
        return result == 1
    }

    /// DER ECDSA-Sig-Value → fixed-width r‖s, or nil when `der` is not exactly one signature.
    static func rawSignature(fromDER der: [UInt8], coordinateByteCount: Int) -> [UInt8]? {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        // get0: r and s stay owned by `signature`.
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else { return nil }
        var raw = [UInt8](repeating: 0, count: 2 * coordinateByteCount)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (
                BN_bn2binpad(r, buffer.baseAddress, Int32(coordinateByteCount)),
                BN_bn2binpad(s, buffer.baseAddress! + coordinateByteCount, Int32(coordinateByteCount))
            )
        }
        guard written.0 == Int32(coordinateByteCount), written.1 == Int32(coordinateByteCount) else { return nil }
        return raw
    }

    /// Fixed-width r‖s → DER ECDSA-Sig-Value, encoded directly (no BIGNUMs): each half becomes a minimal
    /// DER INTEGER. The bytes equal i2d_ECDSA_SIG's for the same r and s, zero included (`02 01 00`), so
    /// range checks (r, s in [1, n-1]) stay OpenSSL's. Nil for an empty or odd-length input.
    static func derSignatureDirect(fromRaw raw: [UInt8]) -> [UInt8]? {
        let half = raw.count / 2
        guard half > 0, raw.count == 2 * half, half <= 60 else { return nil }
        return raw.withUnsafeBufferPointer { raw -> [UInt8] in
            func integer(_ start: Int) -> (first: Int, pad: Bool) {
                var first = start
                while first < start + half - 1, raw[first] == 0 { first += 1 }
                return (first, raw[first] >= 0x80)
            }
            let r = integer(0)
            let s = integer(half)
            let rLength = half - r.first + (r.pad ? 1 : 0)
            let sLength = 2 * half - s.first + (s.pad ? 1 : 0)
            var der: [UInt8] = []
            der.reserveCapacity(6 + rLength + sLength)
            der.append(0x30)
            der.append(UInt8(4 + rLength + sLength))
            der.append(0x02)
            der.append(UInt8(rLength))
            if r.pad { der.append(0) }
            der.append(contentsOf: raw[r.first..<half])
            der.append(0x02)
            der.append(UInt8(sLength))
            if s.pad { der.append(0) }
            der.append(contentsOf: raw[s.first..<2 * half])
            return der
        }
    }

    /// Fixed-width r‖s → DER ECDSA-Sig-Value for EVP_DigestVerify.
    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        let half = raw.count / 2
        guard half > 0, raw.count == 2 * half else { return nil }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(half), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + half, Int32(half), nil) }
        guard let r, let s, let signature = ECDSA_SIG_new() else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        // ECDSA_SIG_set0 takes ownership of r and s on success only; on failure they are still ours.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        return derEncode { i2d_ECDSA_SIG(signature, $0) }
    }
}
