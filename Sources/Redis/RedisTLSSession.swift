internal import COpenSSL

/// TLS over a `RedisSocket`: the owner of one client `SSL`. OpenSSL reads and writes memory BIOs and this
/// moves their bytes through the socket, so every wait is the socket's (bounded by the operation's deadline,
/// never a SIGPIPE) and plain and TLS connections share one I/O path.
package final class RedisTLSSession: RedisByteStream {
    private let socket: RedisSocket
    private let ssl: OpaquePointer
    /// What arrived from the server, for OpenSSL to read (owned by `ssl`).
    private let incoming: OpaquePointer
    /// What OpenSSL wrote for the server (owned by `ssl`).
    private let outgoing: OpaquePointer
    /// Records on their way between the socket and the BIOs.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)

    /// Shakes hands over `socket` before `deadline`; the server's certificate must chain to the context's CAs
    /// and name `host`.
    package init(socket: RedisSocket, context: RedisTLSContext, host: String, deadline: RedisDeadline)
        throws(RedisConnectionFailure)
    {
        self.socket = socket
        ssl = try context.newSession(expecting: host)
        let incoming = BIO_new(BIO_s_mem())
        let outgoing = BIO_new(BIO_s_mem())
        guard let incoming, let outgoing else {
            BIO_free(incoming)
            BIO_free(outgoing)
            SSL_free(ssl)
            throw RedisTLSContext.failure("cannot allocate the TLS buffers")
        }
        SSL_set_bio(ssl, incoming, outgoing)  // `ssl` owns both from here
        self.incoming = incoming
        self.outgoing = outgoing
        do {
            _ = try drive(before: deadline) { SSL_do_handshake(ssl) }
        } catch {
            throw verification(error)
        }
    }

    deinit {
        SSL_free(ssl)  // no close_notify: the connection is closed after an error or at shutdown
        buffer.deallocate()
    }

    package func send(_ bytes: [UInt8], before deadline: RedisDeadline) throws(RedisConnectionFailure) {
        guard !bytes.isEmpty else { return }
        // Without partial writes SSL_write returns when all of it is in `outgoing` (a memory BIO never fills).
        _ = try bytes.withUnsafeBytes { raw in
            Result { () throws(RedisConnectionFailure) in
                try drive(before: deadline) { SSL_write(ssl, raw.baseAddress, Int32(clamping: raw.count)) }
            }
        }.get()
    }

    package func receive(into buffer: UnsafeMutableRawBufferPointer, before deadline: RedisDeadline)
        throws(RedisConnectionFailure) -> Int
    {
        guard !buffer.isEmpty else { return 0 }
        return Int(try drive(before: deadline) { SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count)) })
    }

    /// Runs `operation` until it succeeds (returns more than 0), sending what OpenSSL wrote and feeding it
    /// what the socket receives whenever it wants more, until `deadline` at the latest.
    private func drive(before deadline: RedisDeadline, _ operation: () -> Int32) throws(RedisConnectionFailure)
        -> Int32
    {
        while true {
            ERR_clear_error()
            let rc = operation()
            try flush(before: deadline)
            if rc > 0 { return rc }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ:
                let count = try socket.receive(into: buffer, before: deadline)
                guard BIO_write(incoming, buffer.baseAddress, Int32(count)) == Int32(count) else {
                    throw RedisTLSContext.failure("cannot buffer TLS records", kind: .protocolError)
                }
            case SSL_ERROR_ZERO_RETURN:
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis closed the TLS session")
            default:
                throw RedisTLSContext.failure("Redis TLS failed", kind: .protocolError)
            }
        }
    }

    /// Sends every byte OpenSSL has written.
    private func flush(before deadline: RedisDeadline) throws(RedisConnectionFailure) {
        while BIO_ctrl_pending(outgoing) > 0 {
            let count = BIO_read(outgoing, buffer.baseAddress, Int32(buffer.count))
            guard count > 0 else { return }
            try socket.send(UnsafeRawBufferPointer(rebasing: buffer[..<Int(count)]), before: deadline)
        }
    }

    /// A handshake failure, naming why the server's certificate was refused when it was.
    private func verification(_ failure: RedisConnectionFailure) -> RedisConnectionFailure {
        let result = SSL_get_verify_result(ssl)
        guard result != X509_V_OK, let text = X509_verify_cert_error_string(result) else {
            return RedisConnectionFailure(kind: .connect, message: "TLS handshake: \(failure.message)")
        }
        return RedisConnectionFailure(
            kind: .connect,
            message: "TLS handshake: the Redis server's certificate was refused (\(String(cString: text))): "
                + failure.message)
    }
}
