internal import COpenSSL
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What an OCSP responder says about one certificate (RFC 6960 §2.2).
package enum OCSPCertificateStatus: Sendable, Hashable {
    /// Not revoked.
    case good
    /// Revoked at that time.
    case revoked(at: Date)
    /// The responder does not know the certificate.
    case unknown
}

/// A checked OCSP answer about one certificate.
package struct OCSPAnswer: Sendable, Hashable {
    package let status: OCSPCertificateStatus
    /// When the responder last knew the status to be as it says.
    package let thisUpdate: Date
    /// When newer information will be available (nil: any time).
    package let nextUpdate: Date?

    package init(status: OCSPCertificateStatus, thisUpdate: Date, nextUpdate: Date?) {
        self.status = status
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
    }
}

/// The client side of OCSP (RFC 6960): where to ask, what to send, and what an answer proves. No I/O here.
package enum OCSP {
    /// How far `thisUpdate` may lie in the future and `nextUpdate` in the past (clock skew), as OpenSSL's
    /// own checks allow.
    package static let allowedClockSkew: TimeInterval = 300

    /// The http(s) OCSP responder URLs of `certificate`'s Authority Information Access extension, in order.
    package static func responderURLs(of certificate: Certificate) -> [String] {
        guard let stack = X509_get1_ocsp(certificate.pointer) else { return [] }
        defer { X509_email_free(stack) }
        var urls: [String] = []
        for index in 0..<copenssl_sk_OPENSSL_STRING_num(stack) {
            guard let text = copenssl_sk_OPENSSL_STRING_value(stack, index) else { continue }
            let url = String(cString: text)
            if url.hasPrefix("http://") || url.hasPrefix("https://") { urls.append(url) }
        }
        return urls
    }

    /// A DER OCSPRequest asking about `certificate`, issued by `issuer` (CertID hashed with SHA-256, as
    /// Apple's own verifier asks; no nonce, so answers can be cached and shared).
    package static func request(for certificate: Certificate, issuer: Certificate) throws(CryptographyError) -> [UInt8]
    {
        guard let request = OCSP_REQUEST_new() else {
            throw CryptographyError(.internalFailure, "OCSP_REQUEST_new failed")
        }
        defer { OCSP_REQUEST_free(request) }
        guard let id = OCSP_cert_to_id(EVP_sha256(), certificate.pointer, issuer.pointer) else {
            throw CryptographyError(.internalFailure, "OCSP_cert_to_id failed")
        }
        // add0: the request owns the id from here.
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw CryptographyError(.internalFailure, "OCSP_request_add0_id failed")
        }
        guard let der = derEncode({ i2d_OCSP_REQUEST(request, $0) }) else {
            throw CryptographyError(.internalFailure, "i2d_OCSP_REQUEST failed")
        }
        return der
    }

    /// What the DER OCSP `response` proves about `certificate` (issued by `issuer`) at `now`: the response is
    /// successful, signed by `issuer` or by a responder `issuer` delegated to (OCSP signing purpose) whose
    /// chain leads to one of `trustedRoots` at `now`, and holds a single response for exactly this
    /// certificate that is current (thisUpdate not after `now`, nextUpdate not before, give or take
    /// `allowedClockSkew`). Anything else throws `.invalidOCSPResponse`.
    package static func answer(
        fromResponse response: [UInt8], certificate: Certificate, issuer: Certificate, trustedRoots: [Certificate],
        now: Date
    ) throws(CryptographyError) -> OCSPAnswer {
        let parsed: OpaquePointer? = response.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw invalid("the OCSP response does not parse (\(response.count) bytes)") }
        defer { OCSP_RESPONSE_free(parsed) }
        let responseStatus = OCSP_response_status(parsed)
        guard responseStatus == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            throw invalid(
                "the OCSP responder answered \(String(cString: OCSP_response_status_str(Int(responseStatus))))")
        }
        guard let basic = OCSP_response_get1_basic(parsed) else {
            throw invalid("the OCSP response has no basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }

        guard let store = X509_STORE_new() else { throw CryptographyError(.internalFailure, "X509_STORE_new failed") }
        defer { X509_STORE_free(store) }
        for root in trustedRoots where X509_STORE_add_cert(store, root.pointer) != 1 {
            throw CryptographyError(.internalFailure, "X509_STORE_add_cert failed")
        }
        guard let parameters = X509_STORE_get0_param(store) else {
            throw CryptographyError(.internalFailure, "X509_STORE_get0_param failed")
        }
        X509_VERIFY_PARAM_set_time(parameters, time_t(now.timeIntervalSince1970.rounded(.down)))
        guard let untrusted = copenssl_sk_X509_new_null() else {
            throw CryptographyError(.internalFailure, "sk_X509_new_null failed")
        }
        defer { copenssl_sk_X509_free(untrusted) }  // borrows the certificates, frees only the stack
        guard copenssl_sk_X509_push(untrusted, issuer.pointer) > 0 else {
            throw CryptographyError(.internalFailure, "sk_X509_push failed")
        }
        // The signer is looked up in the response's certificates and `untrusted` (the issuer), its chain is
        // validated against the store, and a signer other than the issuer must carry OCSP signing.
        guard OCSP_basic_verify(basic, untrusted, store, 0) == 1 else {
            throw invalid("the OCSP response is not signed by the issuer or a responder it authorized")
        }

        guard let id = OCSP_cert_to_id(EVP_sha256(), certificate.pointer, issuer.pointer) else {
            throw CryptographyError(.internalFailure, "OCSP_cert_to_id failed")
        }
        defer { OCSP_CERTID_free(id) }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revoked: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revoked, &thisUpdate, &nextUpdate) == 1,
            let thisUpdate
        else { throw invalid("the OCSP response says nothing about \(certificate.subject)") }
        let answer = OCSPAnswer(
            status: status == V_OCSP_CERTSTATUS_GOOD
                ? .good : status == V_OCSP_CERTSTATUS_REVOKED ? .revoked(at: Certificate.date(revoked)) : .unknown,
            thisUpdate: Certificate.date(thisUpdate), nextUpdate: nextUpdate.map { Certificate.date($0) })
        // OCSP_check_validity would compare against the process clock; the caller's `now` is injected (tests,
        // the simulator's compressed time), so the same check, with the same skew allowance, is made here.
        guard answer.thisUpdate <= now + allowedClockSkew else {
            throw invalid("the OCSP response's thisUpdate \(answer.thisUpdate) is in the future")
        }
        if let next = answer.nextUpdate, next < now - allowedClockSkew {
            throw invalid("the OCSP response expired at its nextUpdate \(next)")
        }
        return answer
    }

    private static func invalid(_ reason: String) -> CryptographyError {
        CryptographyError(.invalidOCSPResponse, reason)
    }
}

/// The responder side of OCSP, for test PKIs (the simulator's): answers a DER OCSPRequest about
/// certificates of `issuers`, signing as the issuer itself (RFC 6960 §4.2.2.2).
package enum OCSPResponder {
    /// The DER OCSPResponse to `request`: for each certificate asked about, `good` unless its serial number
    /// (big-endian magnitude bytes) is in `revokedSerials`, with thisUpdate `now` and nextUpdate
    /// `now + validity`; signed by the issuer the request names. A request that does not parse, or names no
    /// issuer of `issuers`, gets `malformedRequest` / `unauthorized`.
    package static func response(
        to request: [UInt8], issuers: [CertificateIssuer], revokedSerials: Set<[UInt8]>, now: Date,
        validity: TimeInterval
    ) -> [UInt8] {
        (try? signedResponse(request, issuers, revokedSerials, now, validity))
            ?? errorResponse(Int32(OCSP_RESPONSE_STATUS_MALFORMEDREQUEST))
    }

    private static func signedResponse(
        _ request: [UInt8], _ issuers: [CertificateIssuer], _ revokedSerials: Set<[UInt8]>, _ now: Date,
        _ validity: TimeInterval
    ) throws(CryptographyError) -> [UInt8] {
        let parsed: OpaquePointer? = request.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_OCSP_REQUEST(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw CryptographyError(.invalidArgument, "the OCSP request does not parse") }
        defer { OCSP_REQUEST_free(parsed) }
        let count = OCSP_request_onereq_count(parsed)
        guard count > 0, count <= 16 else {
            throw CryptographyError(.invalidArgument, "\(count) certificates asked about")
        }
        guard let basic = OCSP_BASICRESP_new() else {
            throw CryptographyError(.internalFailure, "OCSP_BASICRESP_new failed")
        }
        defer { OCSP_BASICRESP_free(basic) }
        guard let thisUpdate = ASN1_GENERALIZEDTIME_set(nil, time_t(now.timeIntervalSince1970)),
            let nextUpdate = ASN1_GENERALIZEDTIME_set(nil, time_t((now + validity).timeIntervalSince1970))
        else { throw CryptographyError(.internalFailure, "ASN1_GENERALIZEDTIME_set failed") }
        defer {
            ASN1_GENERALIZEDTIME_free(thisUpdate)
            ASN1_GENERALIZEDTIME_free(nextUpdate)
        }
        var signer: CertificateIssuer?
        for index in 0..<count {
            guard let one = OCSP_request_onereq_get0(parsed, index), let id = OCSP_onereq_get0_id(one) else {
                throw CryptographyError(.invalidArgument, "request entry \(index) is unreadable")
            }
            var digestObject: OpaquePointer? = nil
            var serial: UnsafeMutablePointer<ASN1_INTEGER>? = nil
            guard OCSP_id_get0_info(nil, &digestObject, nil, &serial, id) == 1, let digestObject, let serial,
                let digest = copenssl_EVP_get_digestbyobj(digestObject)
            else { throw CryptographyError(.invalidArgument, "request entry \(index) has an unknown hash") }
            let issuer = issuers.first { candidate in
                guard let reference = OCSP_cert_to_id(digest, nil, candidate.certificate.pointer) else { return false }
                defer { OCSP_CERTID_free(reference) }
                return OCSP_id_issuer_cmp(reference, id) == 0
            }
            guard let issuer, signer == nil || signer?.certificate == issuer.certificate else {
                return errorResponse(Int32(OCSP_RESPONSE_STATUS_UNAUTHORIZED))
            }
            signer = issuer
            let isRevoked = revokedSerials.contains(magnitude(serial))
            guard
                OCSP_basic_add1_status(
                    basic, id, isRevoked ? V_OCSP_CERTSTATUS_REVOKED : V_OCSP_CERTSTATUS_GOOD,
                    isRevoked ? OCSP_REVOKED_STATUS_KEYCOMPROMISE : -1, isRevoked ? thisUpdate : nil, thisUpdate,
                    nextUpdate) != nil
            else { throw CryptographyError(.internalFailure, "OCSP_basic_add1_status failed") }
        }
        guard let signer,
            OCSP_basic_sign(basic, signer.certificate.pointer, signer.privateKey.key.pointer, EVP_sha256(), nil, 0) == 1
        else { throw CryptographyError(.internalFailure, "OCSP_basic_sign failed") }
        // OCSP_response_create copies the basic response.
        guard let response = OCSP_response_create(Int32(OCSP_RESPONSE_STATUS_SUCCESSFUL), basic) else {
            throw CryptographyError(.internalFailure, "OCSP_response_create failed")
        }
        defer { OCSP_RESPONSE_free(response) }
        guard let der = derEncode({ i2d_OCSP_RESPONSE(response, $0) }) else {
            throw CryptographyError(.internalFailure, "i2d_OCSP_RESPONSE failed")
        }
        return der
    }

    private static func magnitude(_ serial: UnsafePointer<ASN1_INTEGER>) -> [UInt8] {
        guard let number = ASN1_INTEGER_to_BN(serial, nil) else { return [] }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int(copenssl_BN_num_bytes(number)))
        _ = bytes.withUnsafeMutableBufferPointer { BN_bn2bin(number, $0.baseAddress) }
        return bytes
    }

    private static func errorResponse(_ status: Int32) -> [UInt8] {
        guard let response = OCSP_response_create(status, nil) else { return [] }
        defer { OCSP_RESPONSE_free(response) }
        return derEncode({ i2d_OCSP_RESPONSE(response, $0) }) ?? []
    }
}

extension Certificate {
    /// Whether `issuer` names and identifies itself as this certificate's issuer (subject/issuer names, key
    /// identifiers, key usage; not the signature), as OpenSSL matches chain links.
    package func isIssued(by issuer: Certificate) -> Bool {
        let issued = X509_check_issued(issuer.pointer, pointer) == X509_V_OK
        _ = CryptographyError.drainErrorQueue()
        return issued
    }
}
