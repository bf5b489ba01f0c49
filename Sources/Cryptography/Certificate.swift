internal import COpenSSL
import Foundation
import GatewayFoundation

/// An X.509 certificate (RFC 5280), parsed once and read-only afterwards.
///
/// Owns one `X509` reference. OpenSSL 3 lets threads read and verify with the same `X509` concurrently
/// (its lazily cached extension data is computed under a lock), hence `Sendable`.
package final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    let pointer: OpaquePointer
    /// The certificate's DER encoding, exactly as parsed or issued.
    package let derBytes: [UInt8]

    /// Takes over the caller's reference to `pointer`.
    init(takingOwnershipOf pointer: OpaquePointer) throws(CryptographyError) {
        self.pointer = pointer
        guard let der = derEncode({ i2d_X509(pointer, $0) }) else {
            throw CryptographyError(.internalFailure, "i2d_X509 failed")
        }
        self.derBytes = der
    }

    /// Takes over `pointer` while it is still being built; `derBytes` stays empty (see CertificateBuilder).
    init(buildingOwnerOf pointer: OpaquePointer) {
        self.pointer = pointer
        self.derBytes = []
    }

    deinit { X509_free(pointer) }

    /// Parses one DER certificate; trailing bytes after it are rejected.
    package convenience init(derEncoded der: [UInt8]) throws(CryptographyError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        guard let parsed else {
            throw CryptographyError(.invalidCertificate, "not a single DER X.509 certificate (\(der.count) bytes)")
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Parses the first `-----BEGIN CERTIFICATE-----` block of `pem`.
    package convenience init(pemEncoded pem: String) throws(CryptographyError) {
        let bio = try MemoryBIO(reading: Array(pem.utf8))
        guard let parsed = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
            throw CryptographyError(.invalidCertificate, "no PEM certificate found")
        }
        try self.init(takingOwnershipOf: parsed)
    }

    /// Reads a certificate file, DER (`.cer`, as Apple publishes its roots) or PEM.
    package convenience init(contentsOfFile path: String) throws(CryptographyError) {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CryptographyError(.invalidArgument, "cannot read \(path): \(error.localizedDescription)")
        }
        if bytes.starts(with: Array("-----BEGIN".utf8)) {
            try self.init(pemEncoded: String(decoding: bytes, as: UTF8.self))
        } else {
            try self.init(derEncoded: bytes)
        }
    }

    /// The certificate as PEM.
    package var pemEncoded: String {
        let body = Base64.encode(derBytes, variant: .standard)
        var lines = ["-----BEGIN CERTIFICATE-----"]
        var index = body.startIndex
        while index < body.endIndex {
            let end = body.index(index, offsetBy: 64, limitedBy: body.endIndex) ?? body.endIndex
            lines.append(String(body[index..<end]))
            index = end
        }
        lines.append("-----END CERTIFICATE-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Subject distinguished name in RFC 2253 form (last RDN first), e.g. `C=US,O=Apple Inc.,...,CN=Apple Root CA - G3`.
    package var subject: String { Self.rfc2253(X509_get_subject_name(pointer)) }
    /// Issuer distinguished name in RFC 2253 form.
    package var issuer: String { Self.rfc2253(X509_get_issuer_name(pointer)) }

    /// The serial number's big-endian magnitude bytes (no sign padding).
    package var serialNumber: [UInt8] {
        // get0: the ASN1_INTEGER belongs to the certificate.
        guard let serial = X509_get0_serialNumber(pointer),
            let number = ASN1_INTEGER_to_BN(serial, nil)
        else { return [] }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int(copenssl_BN_num_bytes(number)))
        _ = bytes.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        return bytes
    }

    /// Start of the validity period.
    package var notBefore: Date { Self.date(X509_get0_notBefore(pointer)) }
    /// End of the validity period (inclusive, RFC 5280 §4.1.2.5).
    package var notAfter: Date { Self.date(X509_get0_notAfter(pointer)) }

    /// SHA-256 of the DER encoding.
    package var sha256Fingerprint: [UInt8] { SHA256.hash(derBytes) }

    /// Whether an extension with the dotted `oid` (e.g. `1.2.840.113635.100.6.11.1`) is present.
    package func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            _ = CryptographyError.drainErrorQueue()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// The subject public key, if it is an EC key on P-256 or P-384.
    package func publicKey() throws(CryptographyError) -> ECPublicKey {
        // get1: a new reference that the ECPublicKey takes over.
        guard let key = X509_get_pubkey(pointer) else {
            throw CryptographyError(.invalidKey, "the certificate's public key cannot be decoded")
        }
        return try ECPublicKey(takingOwnershipOf: key)
    }

    package var description: String { "Certificate(\(subject), serial \(SHA256.colonHex(serialNumber)))" }

    package static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.derBytes == rhs.derBytes }
    package func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }

    static func rfc2253(_ name: OpaquePointer?) -> String {
        guard let name, let bio = try? MemoryBIO() else { return "" }
        guard copenssl_X509_NAME_print_rfc2253(bio.pointer, name) >= 0 else {
            _ = CryptographyError.drainErrorQueue()
            return ""
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            _ = CryptographyError.drainErrorQueue()
            return .distantPast
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
