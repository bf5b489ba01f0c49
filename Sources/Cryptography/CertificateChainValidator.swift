internal import COpenSSL
import Foundation

/// Why a chain failed RFC 5280 path validation, decided from OpenSSL's numeric verify error.
package enum ChainValidationFailureReason: String, Sendable, Hashable {
    /// No path from the leaf to a configured root (issuer missing, or a self-signed certificate that is
    /// not one of the roots).
    case untrusted
    /// A certificate of the path had expired at the validation time.
    case expired
    /// A certificate of the path was not yet valid at the validation time.
    case notYetValid
    /// A certificate's signature does not verify under its issuer's key.
    case badSignature
    /// A non-CA certificate issued another, or a path length constraint was exceeded.
    case invalidCertificateAuthority
    /// The path violates X.509 strict rules (missing key identifiers, unknown critical extension, ...).
    case policyViolation
    /// Any other validation error.
    case other
}

/// The outcome of validating a chain.
package enum ChainValidationResult: Sendable, Hashable {
    /// The path validated; its certificates' validity periods all contain the returned window.
    case valid(ValidatedChain)
    /// The path did not validate.
    case invalid(ChainValidationFailure)
}

/// A successfully validated path.
package struct ValidatedChain: Sendable, Hashable {
    /// The latest `notBefore` over the whole path (leaf to root).
    package let validFrom: Date
    /// The earliest `notAfter` over the whole path.
    package let validUntil: Date
    /// Number of certificates in the path, root included.
    package let length: Int
}

/// Details of a failed validation.
package struct ChainValidationFailure: Sendable, Hashable, CustomStringConvertible {
    package let reason: ChainValidationFailureReason
    /// OpenSSL's `X509_V_ERR_*` code.
    package let openSSLCode: Int32
    /// Position in the path of the failing certificate (0 = leaf).
    package let depth: Int32
    /// OpenSSL's text for `openSSLCode`, for people (never used to decide anything).
    package let message: String

    package var description: String { "\(message) (X509_V_ERR \(openSSLCode), depth \(depth))" }
}

/// Validates leaf → intermediates → one of a fixed set of trusted roots, at a chosen time, with
/// OpenSSL's X.509 strict checks. Only the configured roots are trust anchors; certificates passed as
/// intermediates are never trusted by themselves.
package final class CertificateChainValidator: @unchecked Sendable {
    // X509_STORE is safe for concurrent X509_verify_cert calls once populated; it is never mutated after
    // init, hence Sendable.
    private let store: OpaquePointer
    /// The trust anchors.
    package let trustedRoots: [Certificate]

    /// A validator trusting exactly `trustedRoots` (at least one).
    package init(trustedRoots: [Certificate]) throws(CryptographyError) {
        guard !trustedRoots.isEmpty else { throw CryptographyError(.invalidArgument, "no trusted root given") }
        guard let store = X509_STORE_new() else { throw CryptographyError(.internalFailure, "X509_STORE_new failed") }
        self.store = store
        self.trustedRoots = trustedRoots
        for root in trustedRoots {
            // X509_STORE_add_cert takes its own reference to the certificate.
            guard X509_STORE_add_cert(store, root.pointer) == 1 else {
                throw CryptographyError(.invalidArgument, "adding trusted root \(root.subject) failed")
            }
        }
    }

    deinit { X509_STORE_free(store) }

    /// Validates `leaf` through `intermediates` to a trusted root as of `time`.
    package func validate(leaf: Certificate, intermediates: [Certificate], at time: Date) -> ChainValidationResult {
        guard let context = X509_STORE_CTX_new() else {
            return .invalid(internalFailure("X509_STORE_CTX_new failed"))
        }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = copenssl_sk_X509_new_null() else {
            return .invalid(internalFailure("sk_X509_new_null failed"))
        }
        // The stack borrows the certificates (sk_X509_free, not pop_free); `intermediates` keeps them alive.
        defer { copenssl_sk_X509_free(untrusted) }
        for certificate in intermediates {
            guard copenssl_sk_X509_push(untrusted, certificate.pointer) > 0 else {
                return .invalid(internalFailure("sk_X509_push failed"))
            }
        }
        return withExtendedLifetime((leaf, intermediates)) {
            guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
                return .invalid(internalFailure("X509_STORE_CTX_init failed"))
            }
            // get0: the parameters belong to the context.
            let parameters = X509_STORE_CTX_get0_param(context)
            X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
            guard X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) == 1 else {
                return .invalid(internalFailure("X509_VERIFY_PARAM_set_flags failed"))
            }
            let status = X509_verify_cert(context)
            guard status == 1 else {
                _ = CryptographyError.drainErrorQueue()
                let code = X509_STORE_CTX_get_error(context)
                let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "unknown"
                return .invalid(
                    ChainValidationFailure(
                        reason: Self.reason(for: code), openSSLCode: code,
                        depth: X509_STORE_CTX_get_error_depth(context), message: text))
            }
            return .valid(Self.window(of: context))
        }
    }

    private func internalFailure(_ what: String) -> ChainValidationFailure {
        _ = CryptographyError.drainErrorQueue()
        return ChainValidationFailure(reason: .other, openSSLCode: -1, depth: -1, message: what)
    }

    private static func window(of context: OpaquePointer) -> ValidatedChain {
        var from = Date.distantPast
        var until = Date.distantFuture
        // get0: the built chain belongs to the context.
        let chain = copenssl_X509_STORE_CTX_get0_chain(context)
        let count = chain.map { copenssl_sk_X509_num($0) } ?? 0
        for index in 0..<count {
            guard let certificate = copenssl_sk_X509_value(chain, index) else { continue }
            from = max(from, Certificate.date(X509_get0_notBefore(certificate)))
            until = min(until, Certificate.date(X509_get0_notAfter(certificate)))
        }
        return ValidatedChain(validFrom: from, validUntil: until, length: Int(count))
    }

    private static func reason(for code: Int32) -> ChainValidationFailureReason {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
            .untrusted
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            .badSignature
        case X509_V_ERR_INVALID_CA, X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
            .invalidCertificateAuthority
        case X509_V_ERR_INVALID_EXTENSION, X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION,
            X509_V_ERR_MISSING_AUTHORITY_KEY_IDENTIFIER, X509_V_ERR_MISSING_SUBJECT_KEY_IDENTIFIER,
            X509_V_ERR_EC_KEY_EXPLICIT_PARAMS, X509_V_ERR_INVALID_NON_CA, X509_V_ERR_CA_BCONS_NOT_CRITICAL,
            X509_V_ERR_EMPTY_SUBJECT_ALT_NAME, X509_V_ERR_ISSUER_NAME_EMPTY, X509_V_ERR_SUBJECT_NAME_EMPTY,
            X509_V_ERR_EXTENSIONS_REQUIRE_VERSION_3:
            .policyViolation
        default: .other
        }
    }
}
