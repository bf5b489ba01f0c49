internal import COpenSSL
import GatewayFoundation

/// The rotating keys of one `TLSContext`'s session tickets, shared by every `SSL_CTX` it makes (a reload keeps
/// them: a client whose session was made under the same client CAs still resumes). OpenSSL would otherwise
/// seal every ticket with one key per `SSL_CTX`, made at start and never rotated.
///
/// Each `SSL_CTX` holds a reference in its ex-data (released by OpenSSL's free callback with the `SSL_CTX`),
/// which is how the C callback, called on the loop threads during handshakes, finds its keys.
final class SessionTicketKeys: Sendable {
    private let schedule: Lock<TicketKeySchedule>

    /// Keys rotate every `lifetime`; each opens tickets for `2 × lifetime` (see `TicketKeySchedule`).
    init(lifetime: Duration) {
        schedule = Lock(TicketKeySchedule(rotation: lifetime, lifetime: lifetime))
    }

    /// The ex-data slot of `SSL_CTX` that holds the keys; OpenSSL releases them with the `SSL_CTX`.
    private static let exDataIndex: Int32 = copenssl_SSL_CTX_get_ex_new_index { _, pointer, _, _, _, _ in
        if let pointer { Unmanaged<SessionTicketKeys>.fromOpaque(pointer).release() }
    }

    /// Makes `context` seal and open its tickets with these keys.
    func install(on context: OpaquePointer) throws(TLSError) {
        guard Self.exDataIndex >= 0 else { throw TLSError("no SSL_CTX ex-data index for the ticket keys") }
        let reference = Unmanaged.passRetained(self)
        guard SSL_CTX_set_ex_data(context, Self.exDataIndex, reference.toOpaque()) == 1 else {
            reference.release()
            throw TLSError("cannot attach the session ticket keys")
        }
        guard copenssl_SSL_CTX_set_ticket_key_cb(context, Self.callback) == 1 else {
            throw TLSError("cannot set the session ticket key callback")
        }
    }

    /// OpenSSL's ticket callback: seal (`encrypt` 1) with the newest key and a fresh IV, or open with the key
    /// the ticket names: 1 done, 2 done but renew the ticket, 0 unknown key (full handshake), -1 failure.
    private static let callback: copenssl_ticket_key_cb = { ssl, name, iv, cipher, mac, encrypt in
        guard let ssl, let name, let iv, let cipher, let mac, let context = SSL_get_SSL_CTX(ssl),
            let pointer = SSL_CTX_get_ex_data(context, exDataIndex)
        else { return -1 }
        let keys = Unmanaged<SessionTicketKeys>.fromOpaque(pointer).takeUnretainedValue()
        let now = MonotonicInstant.now()
        if encrypt == 1 {
            let key = keys.schedule.withLock { $0.sealingKey(now: now, fresh: fresh) }
            guard key.name.count == 16, RAND_bytes(iv, 16) == 1 else { return -1 }
            key.name.withUnsafeBufferPointer { name.update(from: $0.baseAddress!, count: 16) }
            return key.secret.withUnsafeBufferPointer { secret in
                EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nil, secret.baseAddress, iv) == 1
                    && copenssl_ticket_mac_init(mac, secret.baseAddress! + 32, 32) == 1
            } ? 1 : -1
        }
        guard
            let (key, renew) = keys.schedule.withLock({
                $0.openingKey(named: UnsafeBufferPointer(start: name, count: 16), now: now)
            })
        else { return 0 }
        let ready = key.secret.withUnsafeBufferPointer { secret in
            copenssl_ticket_mac_init(mac, secret.baseAddress! + 32, 32) == 1
                && EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nil, secret.baseAddress, iv) == 1
        }
        return ready ? (renew ? 2 : 1) : -1
    }

    /// A key of fresh random bytes (16 for its name, 64 for its secret).
    private static func fresh() -> TicketKeySchedule.Key {
        var bytes = [UInt8](repeating: 0, count: 80)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, 80) } == 1
        // The CSPRNG failing is not recoverable here; a predictable ticket key would be worse than stopping.
        precondition(ok, "RAND_bytes failed: cannot make a session ticket key")
        return TicketKeySchedule.Key(name: Array(bytes[..<16]), secret: Array(bytes[16...]), created: .now())
    }
}
