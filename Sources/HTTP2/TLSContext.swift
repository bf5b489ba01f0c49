#if canImport(Glibc)
import Glibc
#endif
internal import COpenSSL

/// A TLS failure, with OpenSSL's whole error queue drained into the message.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public var description: String

    init(_ what: String) {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        description = reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))"
    }
}

/// A server-side TLS configuration: certificate chain and key from PEM files, TLS 1.2+, and ALPN that
/// prefers "h2" and falls back to "http/1.1". Immutable after init, so it is shared by every loop.
public final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    /// Loads a PEM certificate chain and its PEM private key.
    public init(certificateChainFile: String, privateKeyFile: String) throws(TLSError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new failed") }
        self.context = context
        guard copenssl_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw TLSError("cannot require TLS 1.2")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificateChainFile) == 1 else {
            throw TLSError("cannot load the TLS certificate chain \(certificateChainFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError("cannot load the TLS private key \(privateKeyFile)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError("the TLS private key does not match the certificate")
        }
        copenssl_SSL_CTX_set_partial_writes(context)
        SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, offered, offeredLength, _ in
            guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
            // RFC 7301: pick our most preferred protocol among the client's.
            for wanted in ["h2", "http/1.1"] {
                var index = 0
                while index < Int(offeredLength) {
                    let length = Int(offered[index])
                    let start = index + 1
                    guard start + length <= Int(offeredLength) else { return SSL_TLSEXT_ERR_NOACK }
                    if length == wanted.utf8.count,
                        zip(UnsafeBufferPointer(start: offered + start, count: length), wanted.utf8).allSatisfy({ $0 == $1 })
                    {
                        out.pointee = offered + start
                        outLength.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index = start + length
                }
            }
            return SSL_TLSEXT_ERR_NOACK
        }, nil)
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// TLS over a socket: a non-blocking handshake, then records. Owned by one connection.
final class TLSStream: ByteStream {
    let fd: Int32
    private let ssl: OpaquePointer
    private var closed = false
    private(set) var handshakeDone = false

    /// Takes ownership of `fd`: it is closed with the stream, or here when the stream cannot be made.
    init(fd: Int32, context: TLSContext) throws(TLSError) {
        guard let ssl = SSL_new(context.context) else {
            Glibc.close(fd)
            throw TLSError("SSL_new failed")
        }
        self.ssl = ssl
        self.fd = fd
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw TLSError("SSL_set_fd failed")  // deinit closes `fd` and frees `ssl`
        }
        SSL_set_accept_state(ssl)
    }

    deinit {
        // No TLS close_notify here: deinit may run on any thread; closing is the owning connection's job.
        if !closed { Glibc.close(fd) }
        SSL_free(ssl)
    }

    /// Advances the handshake: true when done; nil when it failed (close the connection).
    func continueHandshake() -> IOResult {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeDone = true
            return .bytes(0)
        }
        return classify(rc)
    }

    /// The ALPN protocol agreed on, e.g. "h2"; nil when the client offered none.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        guard !closed else { return .failed }
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        return rc > 0 ? .bytes(Int(rc)) : classify(rc)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard !closed else { return .failed }
        guard bytes.count > 0 else { return .bytes(0) }
        ERR_clear_error()
        let rc = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        return rc > 0 ? .bytes(Int(rc)) : classify(rc)
    }

    var hasBufferedInput: Bool { SSL_pending(ssl) > 0 }

    func close(abort: Bool) {
        guard !closed else { return }
        closed = true
        if !abort && handshakeDone { _ = SSL_shutdown(ssl) }
        if abort {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
    }

    private func classify(_ rc: Int32) -> IOResult {
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
        case SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            ERR_clear_error()
            return .failed
        }
    }
}
