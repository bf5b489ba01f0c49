internal import COpenSSL

/// A failure inside the Cryptography module, with the whole OpenSSL error queue that explains it.
package struct CryptographyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, decided where the failure happened (never from OpenSSL's text).
    package enum Code: String, Sendable, Hashable {
        /// Input bytes are not a key of the expected encoding (PEM, PKCS#8, SubjectPublicKeyInfo).
        case invalidKey
        /// The key is valid but not one of the supported curves (P-256, P-384).
        case unsupportedKey
        /// Input bytes are not a DER or PEM X.509 certificate.
        case invalidCertificate
        /// An argument is outside what the operation accepts (e.g. an empty name, an unknown OID).
        case invalidArgument
        /// OpenSSL failed where valid input cannot fail (allocation, internal error).
        case internalFailure
        /// An OCSP response that does not parse, is not successful, is not signed by the issuer (or a
        /// responder it delegated to), or says nothing current about the certificate asked about.
        case invalidOCSPResponse
    }

    /// One entry of OpenSSL's thread-local error queue.
    package struct OpenSSLEntry: Sendable, Hashable, CustomStringConvertible {
        /// The packed OpenSSL error code (`ERR_get_error`).
        package let code: UInt
        /// OpenSSL's description, e.g. `error:0680007B:asn1 encoding routines::header too long`.
        package let text: String
        package var description: String { text }
    }

    /// The kind of failure.
    package let code: Code
    /// A sentence naming the operation that failed, for people.
    package let reason: String
    /// The OpenSSL error queue as drained when the failure was detected, oldest first.
    package let openSSLErrors: [OpenSSLEntry]

    /// Creates an error, draining (and so clearing) the calling thread's OpenSSL error queue into it.
    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
        self.openSSLErrors = Self.drainErrorQueue()
    }

    package var description: String {
        if openSSLErrors.isEmpty { return "\(code.rawValue): \(reason)" }
        return "\(code.rawValue): \(reason) [" + openSSLErrors.map(\.text).joined(separator: "; ") + "]"
    }

    /// Empties OpenSSL's per-thread error queue, so one failure never leaks into the next operation: the one
    /// drain of the queue, for every OpenSSL user (TLS in HTTP2 too).
    package static func drainErrorQueue() -> [OpenSSLEntry] {
        var entries: [OpenSSLEntry] = []
        while true {
            let packed = ERR_get_error()
            if packed == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(packed, &buffer, buffer.count)
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            entries.append(OpenSSLEntry(code: UInt(packed), text: text))
        }
        return entries
    }
}
