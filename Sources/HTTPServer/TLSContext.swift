internal import COpenSSL
import Cryptography
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TLS failure, with OpenSSL's whole error queue drained into the message.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public var description: String

    init(_ what: String) {
        let reasons = CryptographyError.drainErrorQueue().map(\.text)
        description = reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))"
    }
}

/// A server-side TLS configuration: certificate chain and key from PEM files, TLS 1.2+, and ALPN that
/// prefers "h2" and falls back to "http/1.1"; with a client CA file, every client must present a certificate
/// that verifies against it (mutual TLS). Shared by every loop: `reload` swaps in new files atomically while
/// connections already made keep the context they started with (OpenSSL counts its references).
///
/// Sessions resume (TLS 1.2 session ids and tickets, TLS 1.3 tickets) for `sessionMaxAge` from their full
/// handshake, never extended by resumptions and never past the client certificate's expiry
/// (`SessionResumptionLimits`): a resumed session carries the client certificate verified when it was made.
/// Its session id context is a digest of the client CA file, so a session made under other client CAs (before a
/// reload that changed them) is never resumed; ticket keys rotate (`SessionTicketKeys`).
public final class TLSContext: @unchecked Sendable {
    /// An `SSL_CTX` pointer, moved between threads only under the mutex.
    private struct Handle: @unchecked Sendable { var pointer: OpaquePointer }
    private let current: Lock<Handle>
    private let ticketKeys: SessionTicketKeys
    private let limits: SessionResumptionLimits

    /// Sessions the server remembers for TLS 1.2 clients that resume by session id rather than ticket; each
    /// holds its client certificate, so the cache is bounded well below OpenSSL's 20,480.
    static let sessionCacheSize = 1_024

    /// Loads a PEM certificate chain and its PEM private key, and (when `clientCAFile` is not empty) the PEM
    /// CA certificates client certificates must chain to. Sessions may be resumed for `sessionMaxAge` (at least
    /// 1 s) from their full handshake, judged by `clock`'s wall time.
    public init(
        certificateChainFile: String, privateKeyFile: String, clientCAFile: String = "",
        sessionMaxAge: Duration = .seconds(3_600), clock: any GatewayClock = SystemClock()
    ) throws(TLSError) {
        let maxAge = max(sessionMaxAge, .seconds(1))
        let ticketKeys = SessionTicketKeys(lifetime: maxAge)
        let limits = SessionResumptionLimits(policy: SessionResumptionPolicy(maxAge: maxAge), clock: clock)
        self.ticketKeys = ticketKeys
        self.limits = limits
        current = Lock(
            Handle(
                pointer: try Self.makeContext(
                    certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile,
                    clientCAFile: clientCAFile, ticketKeys: ticketKeys, limits: limits)))
    }

    /// Replaces the files in force for connections accepted from now on; on failure the old ones stay.
    public func reload(certificateChainFile: String, privateKeyFile: String, clientCAFile: String = "") throws(TLSError)
    {
        let fresh = Handle(
            pointer: try Self.makeContext(
                certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile, clientCAFile: clientCAFile,
                ticketKeys: ticketKeys, limits: limits))
        let old = current.withLock { context in
            let old = context
            context = fresh
            return old
        }
        SSL_CTX_free(old.pointer)  // connections made with it hold their own references
    }

    /// A new connection's SSL object from the context in force (under the lock, so a reload cannot free it first).
    func newSSL() -> OpaquePointer? {
        current.withLock { SSL_new($0.pointer) }
    }

    deinit {
        current.withLock { SSL_CTX_free($0.pointer) }
    }

    private static func makeContext(
        certificateChainFile: String, privateKeyFile: String, clientCAFile: String, ticketKeys: SessionTicketKeys,
        limits: SessionResumptionLimits
    ) throws(TLSError) -> OpaquePointer {
        // One read of the client CA file: the CAs that verify clients and the session id context are the same bytes.
        var clientCAs: ClientCAFile?
        if !clientCAFile.isEmpty {
            guard let bytes = readFile(clientCAFile, limit: 16 << 20) else {
                throw TLSError(
                    "cannot read the client CA certificates \(clientCAFile) (missing, unreadable or over 16 MiB)")
            }
            clientCAs = ClientCAFile(path: clientCAFile, bytes: bytes)
        }
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new failed") }
        do throws(TLSError) {
            try configure(
                context, certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile,
                clientCAs: clientCAs)
            try configureResumption(context, clientCAs: clientCAs, ticketKeys: ticketKeys, limits: limits)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        return context
    }

    /// Session resumption: the session id context (OpenSSL refuses to resume a session whose client
    /// certificate was verified without one, with a fatal "internal error" alert), the maximum age (OpenSSL's
    /// timeout, the ticket lifetime clients are told; `SessionResumptionLimits` enforces it), a bounded session
    /// cache, and the rotating ticket keys.
    private static func configureResumption(
        _ context: OpaquePointer, clientCAs: ClientCAFile?, ticketKeys: SessionTicketKeys,
        limits: SessionResumptionLimits
    ) throws(TLSError) {
        // What a session was verified against: the client CA file's bytes (none: no client certificates).
        // SHA-256 is 32 bytes, SSL_MAX_SID_CTX_LENGTH exactly.
        var material = Array("appstore-gateway session context v1\n".utf8)
        if let clientCAs { material += clientCAs.bytes }
        let sessionContext = SHA256.hash(material)
        guard SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw TLSError("cannot set the TLS session id context")
        }
        _ = SSL_CTX_set_timeout(context, Int(limits.maxAge.components.seconds))
        _ = copenssl_SSL_CTX_sess_set_cache_size(context, sessionCacheSize)
        try ticketKeys.install(on: context)
        try limits.install(on: context)
    }

    /// The bytes of the file at `path`, or nil when it cannot be read or is larger than `limit`.
    private static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { return ferror(file) == 0 ? bytes : nil }
            bytes += chunk[..<count]
            if bytes.count > limit { return nil }
        }
    }

    private static func configure(
        _ context: OpaquePointer, certificateChainFile: String, privateKeyFile: String, clientCAs: ClientCAFile?
    ) throws(TLSError) {
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
        if let clientCAs {
            try clientCAs.install(on: context)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            SSL_CTX_set_verify_depth(context, 8)
        }
        copenssl_SSL_CTX_set_partial_writes(context)
        SSL_CTX_set_alpn_select_cb(
            context,
            { _, out, outLength, offered, offeredLength, _ in
                guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
                // RFC 7301: pick our most preferred protocol among the client's.
                for wanted in ["h2", "http/1.1"] {
                    var index = 0
                    while index < Int(offeredLength) {
                        let length = Int(offered[index])
                        let start = index + 1
                        guard start + length <= Int(offeredLength) else { return SSL_TLSEXT_ERR_NOACK }
                        if length == wanted.utf8.count,
                            zip(UnsafeBufferPointer(start: offered + start, count: length), wanted.utf8).allSatisfy({
                                $0 == $1
                            })
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
}

/// The bytes of `tls.clientCAFile`, read once per context: the CAs that verify client certificates and the
/// digest that scopes session resumption both come from them, so a file replaced between two reads can never
/// pair one file's CAs with another's sessions.
struct ClientCAFile {
    var path: String
    var bytes: [UInt8]

    /// Trusts every PEM certificate of the file for client certificates and names each in the
    /// CertificateRequest (so clients pick a matching certificate); a file without one is refused.
    func install(on context: OpaquePointer) throws(TLSError) {
        guard let store = SSL_CTX_get_cert_store(context) else {
            throw TLSError("the SSL_CTX has no certificate store")
        }
        let bio = bytes.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32(clamping: $0.count)) }
        guard let bio else { throw TLSError("cannot read the client CA certificates \(path)") }
        defer { BIO_free(bio) }
        ERR_clear_error()
        var count = 0
        while let certificate = PEM_read_bio_X509_AUX(bio, nil, nil, nil) {
            defer { X509_free(certificate) }
            guard X509_STORE_add_cert(store, certificate) == 1, SSL_CTX_add_client_CA(context, certificate) == 1 else {
                throw TLSError("cannot load the client CA certificates \(path)")
            }
            count += 1
        }
        // The loop ends at the end of the input (no further PEM start line) or at a malformed certificate.
        guard copenssl_ERR_is_pem_end_of_input(ERR_peek_last_error()) == 1 || ERR_peek_last_error() == 0, count > 0
        else { throw TLSError("cannot load the client CA certificates \(path) (no PEM certificate, or a broken one)") }
        ERR_clear_error()
    }
}

/// What a verified client certificate says about its holder: its URI and DNS subject alternative names
/// (at most 16 each, each at most 1 KiB) and its subject common name. A plain carrier of the names, in
/// certificate order; which of them identify a caller is `CallerName.certificateNames`'s decision.
public struct PeerCertificateIdentity: Sendable, Hashable {
    /// The URI SANs (e.g. a SPIFFE id).
    public var uriNames: [String]
    /// The DNS SANs.
    public var dnsNames: [String]
    /// The subject CN, if any.
    public var commonName: String?

    /// The names of one certificate.
    public init(uriNames: [String] = [], dnsNames: [String] = [], commonName: String? = nil) {
        self.uriNames = uriNames
        self.dnsNames = dnsNames
        self.commonName = commonName
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
        guard let ssl = context.newSSL() else {
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

    /// The verified client certificate's names (nil without one). Only called after the handshake, when
    /// OpenSSL has verified the chain (a client CA is configured) or no certificate was asked for.
    var peerCertificateIdentity: PeerCertificateIdentity? {
        guard SSL_get_verify_result(ssl) == X509_V_OK, let certificate = SSL_get1_peer_certificate(ssl) else {
            return nil
        }
        defer { X509_free(certificate) }
        var identity = PeerCertificateIdentity()
        let limit = 16
        if let names = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) {
            let stack = OpaquePointer(names)
            defer { GENERAL_NAMES_free(stack) }
            for index in 0..<max(0, min(Int(OPENSSL_sk_num(stack)), 256)) {
                guard let item = OPENSSL_sk_value(stack, Int32(index)) else { continue }
                var type: Int32 = 0
                var data: UnsafePointer<UInt8>?
                var length: Int32 = 0
                guard
                    copenssl_general_name_text(item.assumingMemoryBound(to: GENERAL_NAME.self), &type, &data, &length)
                        == 1, let data,
                    length > 0, length <= 1024
                else { continue }
                let text = String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
                if type == GEN_URI && identity.uriNames.count < limit { identity.uriNames.append(text) }
                if type == GEN_DNS && identity.dnsNames.count < limit { identity.dnsNames.append(text) }
            }
        }
        if let subject = X509_get_subject_name(certificate) {
            let index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1)
            if index >= 0, let entry = X509_NAME_get_entry(subject, index), let value = X509_NAME_ENTRY_get_data(entry)
            {
                var utf8: UnsafeMutablePointer<UInt8>?
                let length = ASN1_STRING_to_UTF8(&utf8, value)
                if length > 0, length <= 1024, let utf8 {
                    identity.commonName = String(
                        decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
                }
                if let utf8 { copenssl_free(utf8) }
            }
        }
        ERR_clear_error()
        return identity
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

    /// Whether the handshake resumed an earlier session (by ticket or session id) instead of a full one.
    var sessionReused: Bool { SSL_session_reused(ssl) == 1 }

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
