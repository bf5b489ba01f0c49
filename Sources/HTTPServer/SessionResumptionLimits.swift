internal import COpenSSL
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// Bounds every resumption of a `TLSContext`'s sessions by `SessionResumptionPolicy`, through three OpenSSL
/// callbacks on each `SSL_CTX` it makes:
///
/// - a ticket being sealed gets its session's `SessionOrigin` (the one it already carries when resumed, else
///   the full handshake's time and the client certificate's `notAfter`) as its application data;
/// - a ticket a client offers resumes only while its origin allows (otherwise a full handshake, where an
///   expired certificate is refused);
/// - a session entering the session cache (TLS 1.2 clients that resume by id) gets the timeout its origin
///   leaves, so OpenSSL's own check stops it at the same instant.
///
/// OpenSSL alone would let a TLS 1.3 client resume forever: it restamps a session's time with every ticket.
final class SessionResumptionLimits: Sendable {
    private let policy: SessionResumptionPolicy
    private let clock: any GatewayClock

    /// `tls.sessionMaxAge`.
    var maxAge: Duration { policy.maxAge }

    init(policy: SessionResumptionPolicy, clock: any GatewayClock) {
        self.policy = policy
        self.clock = clock
    }

    /// The ex-data slot of `SSL_CTX` that holds the limits; OpenSSL releases them with the `SSL_CTX`.
    private static let exDataIndex: Int32 = copenssl_SSL_CTX_get_ex_new_index { _, pointer, _, _, _, _ in
        if let pointer { Unmanaged<SessionResumptionLimits>.fromOpaque(pointer).release() }
    }

    /// Makes `context` apply these limits.
    func install(on context: OpaquePointer) throws(TLSError) {
        guard Self.exDataIndex >= 0 else { throw TLSError("no SSL_CTX ex-data index for the session limits") }
        let reference = Unmanaged.passRetained(self)
        guard SSL_CTX_set_ex_data(context, Self.exDataIndex, reference.toOpaque()) == 1 else {
            reference.release()
            throw TLSError("cannot attach the session limits")
        }
        guard SSL_CTX_set_session_ticket_cb(context, Self.sealing, Self.opening, nil) == 1 else {
            throw TLSError("cannot set the session ticket callbacks")
        }
        SSL_CTX_sess_set_new_cb(context, Self.caching)
    }

    /// The limits of the `SSL_CTX` that `ssl` was made from.
    private static func limits(_ ssl: OpaquePointer?) -> SessionResumptionLimits? {
        guard let ssl, let context = SSL_get_SSL_CTX(ssl), let pointer = SSL_CTX_get_ex_data(context, exDataIndex)
        else { return nil }
        return Unmanaged<SessionResumptionLimits>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// A ticket is about to be sealed for the connection's session: 1 to go on, 0 fails the handshake.
    private static let sealing: SSL_CTX_generate_session_ticket_fn = { ssl, _ in
        guard let limits = limits(ssl), let session = SSL_get_session(ssl) else { return 0 }
        if recordedOrigin(session) != nil { return 1 }  // a resumed session keeps its first handshake's
        // A TLS 1.2 session resumed by id is the session cache's own object, which every loop may be reading: it is
        // never written. Its ticket carries no origin, so it only ever leads to a full handshake.
        if SSL_session_reused(ssl) == 1 && SSL_version(ssl) < TLS1_3_VERSION { return 1 }
        let origin = limits.origin(of: session, resumed: SSL_session_reused(ssl) == 1)
        let data = origin.ticketData
        return data.withUnsafeBytes { SSL_SESSION_set1_ticket_appdata(session, $0.baseAddress, $0.count) }
    }

    /// A ticket a client offered, as OpenSSL found it: use it, ignore it (a full handshake) or abort.
    private static let opening: SSL_CTX_decrypt_session_ticket_fn = { ssl, session, _, _, status, _ in
        guard let limits = limits(ssl) else { return SSL_TICKET_RETURN_ABORT }
        let ticket: SessionResumptionPolicy.Ticket
        switch status {
        case SSL_TICKET_SUCCESS, SSL_TICKET_SUCCESS_RENEW:
            ticket = .opened(
                origin: session.flatMap(recordedOrigin), renew: status == SSL_TICKET_SUCCESS_RENEW)
        case SSL_TICKET_EMPTY, SSL_TICKET_NO_DECRYPT: ticket = .unusable
        default: ticket = .failed
        }
        switch limits.policy.decide(ticket, now: limits.clock.wallNow()) {
        case .resume(let renew): return renew ? SSL_TICKET_RETURN_USE_RENEW : SSL_TICKET_RETURN_USE
        case .fullHandshake: return SSL_TICKET_RETURN_IGNORE_RENEW
        case .abort: return SSL_TICKET_RETURN_ABORT
        }
    }

    /// A session enters the session cache: its timeout becomes what its origin leaves. 0: no reference kept.
    private static let caching: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
        guard let limits = limits(ssl), let session else { return 0 }
        let origin = recordedOrigin(session) ?? limits.origin(of: session, resumed: SSL_session_reused(ssl) == 1)
        let timeout = limits.policy.cacheTimeout(of: origin, sessionTime: Int64(SSL_SESSION_get_time(session)))
        _ = SSL_SESSION_set_timeout(session, Int(clamping: timeout))
        return 0
    }

    /// The origin a session's ticket data records, if any.
    private static func recordedOrigin(_ session: OpaquePointer) -> SessionOrigin? {
        var data: UnsafeMutableRawPointer?
        var length = 0
        guard SSL_SESSION_get0_ticket_appdata(session, &data, &length) == 1, let data, length > 0 else { return nil }
        return SessionOrigin(ticketData: UnsafeRawBufferPointer(start: data, count: length))
    }

    /// The origin of a session that records none: made now by a full handshake, or (resumed by id, TLS 1.2)
    /// at OpenSSL's session time, which TLS 1.2 never restamps; its client certificate's `notAfter`.
    private func origin(of session: OpaquePointer, resumed: Bool) -> SessionOrigin {
        let time =
            resumed ? WallTime(millisecondsSince1970: Int64(SSL_SESSION_get_time(session)) &* 1_000) : clock.wallNow()
        return SessionOrigin(fullHandshake: time, certificateNotAfter: Self.notAfter(SSL_SESSION_get0_peer(session)))
    }

    /// A certificate's `notAfter`; the distant past when it cannot be read (a session that never resumes).
    private static func notAfter(_ certificate: OpaquePointer?) -> WallTime? {
        guard let certificate else { return nil }
        var parts = tm()
        guard let time = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            return WallTime(millisecondsSince1970: 0)
        }
        return WallTime(millisecondsSince1970: Int64(timegm(&parts)) &* 1_000)
    }
}
