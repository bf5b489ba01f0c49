internal import COpenSSL
import Cryptography

/// A TLS client configuration for Redis, the owner of one `SSL_CTX`: TLS 1.2 or later, the server's
/// certificate verified against `caFile` (or the system's CAs) and its name against the URL's host, and a
/// client certificate when the files name one. Made at each connect from the files (a few hundred
/// microseconds), so CA and certificate rotations need no restart; the session made from it keeps its own
/// reference, so the context is freed when this goes.
package final class RedisTLSContext {
    private let context: OpaquePointer

    /// Loads `files`; the failure names the file and carries OpenSSL's whole error queue.
    package init(files: RedisTLSFiles) throws(RedisConnectionFailure) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw Self.failure("SSL_CTX_new failed") }
        self.context = context
        guard copenssl_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw Self.failure("cannot require TLS 1.2")
        }
        if files.caFile.isEmpty {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw Self.failure("cannot load the system CA certificates")
            }
        } else {
            guard SSL_CTX_load_verify_locations(context, files.caFile, nil) == 1 else {
                throw Self.failure("cannot load the Redis CA certificates \(files.caFile)")
            }
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        SSL_CTX_set_verify_depth(context, 8)
        if !files.certFile.isEmpty {
            guard SSL_CTX_use_certificate_chain_file(context, files.certFile) == 1 else {
                throw Self.failure("cannot load the Redis client certificate \(files.certFile)")
            }
            guard SSL_CTX_use_PrivateKey_file(context, files.keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw Self.failure("cannot load the Redis client key \(files.keyFile)")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw Self.failure("the Redis client key does not match its certificate")
            }
        }
    }

    deinit { SSL_CTX_free(context) }

    /// A client session expecting a certificate for `host` (its owner frees it).
    func newSession(expecting host: String) throws(RedisConnectionFailure) -> OpaquePointer {
        guard let ssl = SSL_new(context) else { throw Self.failure("SSL_new failed") }
        guard copenssl_SSL_expect_host(ssl, host) == 1 else {
            SSL_free(ssl)
            throw Self.failure("cannot expect the Redis host name \(host)")
        }
        SSL_set_connect_state(ssl)
        return ssl
    }

    /// `what`, with OpenSSL's error queue drained into the message (so it never leaks into a later call).
    static func failure(_ what: String, kind: RedisFailureKind = .connect) -> RedisConnectionFailure {
        let reasons = CryptographyError.drainErrorQueue().map(\.text)
        return RedisConnectionFailure(
            kind: kind, message: reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))")
    }
}
