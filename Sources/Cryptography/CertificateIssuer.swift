internal import COpenSSL
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A distinguished name built from the attributes test and simulator PKIs need.
package struct DistinguishedName: Sendable, Hashable {
    package var commonName: String
    package var organizationalUnit: String?
    package var organization: String?
    package var country: String?

    /// A name with the given attributes (encoded CN, OU, O, C in that order, as Apple's certificates are).
    package init(
        commonName: String, organizationalUnit: String? = nil, organization: String? = nil,
        country: String? = nil
    ) {
        self.commonName = commonName
        self.organizationalUnit = organizationalUnit
        self.organization = organization
        self.country = country
    }
}

/// What a certificate to be issued says about its subject.
package struct CertificateTemplate: Sendable {
    /// The role, which decides basicConstraints and keyUsage (both critical, as RFC 5280 asks of CAs).
    package enum Role: Sendable, Hashable {
        /// A CA (`CA:TRUE`, keyCertSign + cRLSign), with an optional path length constraint.
        case certificateAuthority(pathLength: Int?)
        /// An end entity (`CA:FALSE`, digitalSignature).
        case endEntity
    }

    package var subject: DistinguishedName
    package var serialNumber: UInt64
    package var notBefore: Date
    package var notAfter: Date
    package var role: Role
    /// Dotted OIDs of non-critical marker extensions whose value is ASN.1 NULL, the form of Apple's
    /// `1.2.840.113635.100.6.2.1` (WWDR intermediate) and `1.2.840.113635.100.6.11.1` (receipt signing).
    package var markerExtensionOIDs: [String]
    /// subjectAltName entries for a TLS server certificate: DNS names and IP addresses ("localhost",
    /// "127.0.0.1", "::1"); with any, the certificate also gets extendedKeyUsage serverAuth.
    package var subjectAlternativeNames: [String]
    /// An OCSP responder URL for the Authority Information Access extension (nil: none).
    package var ocspResponderURL: String?

    package init(
        subject: DistinguishedName, serialNumber: UInt64, notBefore: Date, notAfter: Date, role: Role,
        markerExtensionOIDs: [String] = [], subjectAlternativeNames: [String] = [],
        ocspResponderURL: String? = nil
    ) {
        self.subject = subject
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.role = role
        self.markerExtensionOIDs = markerExtensionOIDs
        self.subjectAlternativeNames = subjectAlternativeNames
        self.ocspResponderURL = ocspResponderURL
    }
}

/// A CA that can issue certificates: its certificate and private key. Used to mint test PKIs in code.
package struct CertificateIssuer: Sendable {
    /// The issuer's certificate.
    package let certificate: Certificate
    /// The issuer's signing key.
    package let privateKey: ECPrivateKey

    /// Pairs an existing CA certificate with its key.
    package init(certificate: Certificate, privateKey: ECPrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// A self-signed root CA for `key` (subject key identifier, no authority key identifier).
    package static func selfSignedRoot(_ template: CertificateTemplate, key: ECPrivateKey) throws(CryptographyError)
        -> CertificateIssuer
    {
        let publicKey = try key.publicKey
        let certificate = try CertificateBuilder.build(
            template, subjectKey: publicKey, issuerCertificate: nil, issuerKey: key)
        return CertificateIssuer(certificate: certificate, privateKey: key)
    }

    /// Issues a certificate for `subjectKey`, signed by this issuer (SHA-384 from a P-384 issuer key,
    /// SHA-256 from P-256), with subject and authority key identifiers.
    package func issue(_ template: CertificateTemplate, for subjectKey: ECPublicKey) throws(CryptographyError)
        -> Certificate
    {
        try CertificateBuilder.build(
            template, subjectKey: subjectKey, issuerCertificate: certificate, issuerKey: privateKey)
    }
}

/// The X509_* calls behind `CertificateIssuer`.
enum CertificateBuilder {
    static func build(
        _ template: CertificateTemplate, subjectKey: ECPublicKey, issuerCertificate: Certificate?,
        issuerKey: ECPrivateKey
    ) throws(CryptographyError) -> Certificate {
        guard let x509 = X509_new() else { throw CryptographyError(.internalFailure, "X509_new failed") }
        // From here `certificate` owns x509 and frees it on every exit path.
        let owner = Certificate(buildingOwnerOf: x509)
        guard X509_set_version(x509, Int(X509_VERSION_3)) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), template.serialNumber) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(template.notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(template.notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, subjectKey.key.pointer) == 1  // takes its own reference
        else { throw CryptographyError(.internalFailure, "setting the certificate's basic fields failed") }

        let subjectName = try makeName(template.subject)
        defer { X509_NAME_free(subjectName) }
        // X509_set_subject_name / X509_set_issuer_name copy the name.
        guard X509_set_subject_name(x509, subjectName) == 1 else {
            throw CryptographyError(.internalFailure, "X509_set_subject_name failed")
        }
        let issuerName = issuerCertificate.map { X509_get_subject_name($0.pointer) } ?? subjectName
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw CryptographyError(.internalFailure, "X509_set_issuer_name failed")
        }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuerCertificate?.pointer ?? x509, x509, nil, nil, 0)
        switch template.role {
        case .certificateAuthority(let pathLength):
            let constraint = pathLength.map { "critical,CA:TRUE,pathlen:\($0)" } ?? "critical,CA:TRUE"
            try addExtension(x509, &context, NID_basic_constraints, constraint)
            try addExtension(x509, &context, NID_key_usage, "critical,keyCertSign,cRLSign")
        case .endEntity:
            try addExtension(x509, &context, NID_basic_constraints, "critical,CA:FALSE")
            try addExtension(x509, &context, NID_key_usage, "critical,digitalSignature")
        }
        try addExtension(x509, &context, NID_subject_key_identifier, "hash")
        if issuerCertificate != nil {
            try addExtension(x509, &context, NID_authority_key_identifier, "keyid:always")
        }
        for oid in template.markerExtensionOIDs { try addMarkerExtension(x509, oid: oid) }
        if let url = template.ocspResponderURL {
            guard url.hasPrefix("http"), !url.contains(","), !url.contains("\n") else {
                throw CryptographyError(.invalidArgument, "invalid OCSP responder URL \"\(url)\"")
            }
            try addExtension(x509, &context, NID_info_access, "OCSP;URI:\(url)")
        }
        if !template.subjectAlternativeNames.isEmpty {
            let entries = try template.subjectAlternativeNames.map { name throws(CryptographyError) -> String in
                guard !name.isEmpty, !name.contains(","), !name.contains("\n") else {
                    throw CryptographyError(.invalidArgument, "invalid subjectAltName \"\(name)\"")
                }
                return isIPAddress(name) ? "IP:\(name)" : "DNS:\(name)"
            }
            try addExtension(x509, &context, NID_subject_alt_name, entries.joined(separator: ","))
            try addExtension(x509, &context, NID_ext_key_usage, "serverAuth")
        }

        let digest = issuerKey.curve.digest
        guard X509_sign(x509, issuerKey.key.pointer, digest) > 0 else {
            throw CryptographyError(.internalFailure, "X509_sign failed")
        }
        // Re-parse so derBytes and every cached field reflect the signed certificate.
        guard let der = derEncode({ i2d_X509(x509, $0) }) else {
            throw CryptographyError(.internalFailure, "i2d_X509 failed")
        }
        return try withExtendedLifetime(owner) { () throws(CryptographyError) -> Certificate in
            try Certificate(derEncoded: der)
        }
    }

    /// True for a literal IPv4 or IPv6 address.
    private static func isIPAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }

    private static func makeName(_ name: DistinguishedName) throws(CryptographyError) -> OpaquePointer {
        guard let x509Name = X509_NAME_new() else { throw CryptographyError(.internalFailure, "X509_NAME_new failed") }
        let attributes: [(String, String?)] = [
            ("CN", name.commonName), ("OU", name.organizationalUnit), ("O", name.organization), ("C", name.country),
        ]
        for case let (field, value?) in attributes {
            let bytes = Array(value.utf8)
            guard !bytes.isEmpty,
                X509_NAME_add_entry_by_txt(x509Name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1
            else {
                X509_NAME_free(x509Name)
                throw CryptographyError(.invalidArgument, "invalid \(field) attribute \"\(value)\"")
            }
        }
        return x509Name
    }

    private static func addExtension(
        _ x509: OpaquePointer, _ context: inout X509V3_CTX, _ nid: Int32,
        _ value: String
    ) throws(CryptographyError) {
        guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            throw CryptographyError(.internalFailure, "building extension \(nid) = \(value) failed")
        }
        defer { X509_EXTENSION_free(ext) }
        // X509_add_ext appends a copy.
        guard X509_add_ext(x509, ext, -1) == 1 else {
            throw CryptographyError(.internalFailure, "X509_add_ext(\(nid)) failed")
        }
    }

    private static func addMarkerExtension(_ x509: OpaquePointer, oid: String) throws(CryptographyError) {
        guard let object = OBJ_txt2obj(oid, 1) else {
            throw CryptographyError(.invalidArgument, "\"\(oid)\" is not a dotted OID")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else {
            throw CryptographyError(.internalFailure, "ASN1_OCTET_STRING_new failed")
        }
        defer { ASN1_OCTET_STRING_free(value) }
        let asn1Null: [UInt8] = [0x05, 0x00]
        guard ASN1_OCTET_STRING_set(value, asn1Null, Int32(asn1Null.count)) == 1,
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, value)  // copies object and value
        else { throw CryptographyError(.internalFailure, "building marker extension \(oid) failed") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else {
            throw CryptographyError(.internalFailure, "X509_add_ext(\(oid)) failed")
        }
    }
}
