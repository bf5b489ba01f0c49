import Foundation
internal import COpenSSL

/// Issues TLS server certificates with subjectAltName, which `Cryptography.CertificateIssuer` does not
/// offer: P-256 server key, serverAuth, DNS and IP SANs, signed by the simulator's TLS CA.
enum TLSServerCertificate {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The PEM certificate for `serverKeyPEM`, signed by the CA in `caCertificatePEM`/`caKeyPEM`.
    static func issue(
        caCertificatePEM: String, caKeyPEM: String, serverKeyPEM: String, commonName: String, dnsNames: [String],
        ipAddresses: [String], notBefore: Date, notAfter: Date, serialNumber: UInt64
    ) throws(Failure) -> String {
        guard let caCertificate = readCertificate(caCertificatePEM) else { throw Failure(description: "bad CA certificate") }
        defer { X509_free(caCertificate) }
        guard let caKey = readKey(caKeyPEM) else { throw Failure(description: "bad CA key") }
        defer { EVP_PKEY_free(caKey) }
        guard let serverKey = readKey(serverKeyPEM) else { throw Failure(description: "bad server key") }
        defer { EVP_PKEY_free(serverKey) }
        guard let x509 = X509_new() else { throw Failure(description: "X509_new failed") }
        defer { X509_free(x509) }
        guard X509_set_version(x509, Int(X509_VERSION_3)) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serialNumber) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, serverKey) == 1,  // takes its own reference
            let name = X509_NAME_new()
        else { throw Failure(description: "setting the certificate fields failed") }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1,
            X509_set_subject_name(x509, name) == 1,  // copies
            X509_set_issuer_name(x509, X509_get_subject_name(caCertificate)) == 1  // copies
        else { throw Failure(description: "setting the names failed") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, caCertificate, x509, nil, nil, 0)
        let alternativeNames = (dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }).joined(separator: ",")
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, alternativeNames),
            (NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always"),
        ]
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw Failure(description: "extension \(nid) '\(value)' rejected")
            }
            defer { X509_EXTENSION_free(ext) }  // X509_add_ext copies
            guard X509_add_ext(x509, ext, -1) == 1 else { throw Failure(description: "X509_add_ext failed") }
        }
        guard X509_sign(x509, caKey, EVP_sha256()) > 0 else { throw Failure(description: "X509_sign failed") }
        guard let bio = BIO_new(BIO_s_mem()) else { throw Failure(description: "BIO_new failed") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, x509) == 1 else { throw Failure(description: "PEM_write_bio_X509 failed") }
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw Failure(description: "empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    private static func readCertificate(_ pem: String) -> OpaquePointer? {
        withMemoryBIO(pem) { PEM_read_bio_X509($0, nil, nil, nil) }
    }

    private static func readKey(_ pem: String) -> OpaquePointer? {
        withMemoryBIO(pem) { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }
    }

    private static func withMemoryBIO(_ text: String, _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}
