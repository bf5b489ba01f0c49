import GatewayFoundation

/// Where a TLS session came from: the time of its full handshake and the `notAfter` of the client certificate
/// verified then. It travels inside every ticket sealed for the session (OpenSSL's ticket application data), so
/// a resumption, and the tickets it is given, carry the first full handshake's facts however often the client
/// resumes. OpenSSL's own session time cannot serve: TLS 1.3 restamps it with every ticket it issues.
struct SessionOrigin: Sendable, Equatable {
    /// When the full handshake happened.
    var fullHandshake: WallTime
    /// The client certificate's `notAfter` (valid through that second, RFC 5280 §4.1.2.5); nil without one.
    var certificateNotAfter: WallTime?

    /// The ticket application data's version (its first byte).
    static let version: UInt8 = 1
    /// Version, then the two times as big-endian milliseconds since 1970 (`Int64.min`: no certificate).
    static let encodedCount = 17

    init(fullHandshake: WallTime, certificateNotAfter: WallTime?) {
        self.fullHandshake = fullHandshake
        self.certificateNotAfter = certificateNotAfter
    }

    /// The bytes sealed into a ticket.
    var ticketData: [UInt8] {
        var bytes = [Self.version]
        for value in [fullHandshake.millisecondsSince1970, certificateNotAfter?.millisecondsSince1970 ?? .min] {
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        }
        return bytes
    }

    /// The origin a ticket carries; nil for data of another length or version (a ticket sealed without one).
    init?(ticketData: some Collection<UInt8>) {
        let bytes = Array(ticketData)
        guard bytes.count == Self.encodedCount, bytes[0] == Self.version else { return nil }
        func int64(at start: Int) -> Int64 {
            bytes[start..<start + 8].reduce(0) { ($0 << 8) | Int64($1) }
        }
        let notAfter = int64(at: 9)
        self.init(
            fullHandshake: WallTime(millisecondsSince1970: int64(at: 1)),
            certificateNotAfter: notAfter == .min ? nil : WallTime(millisecondsSince1970: notAfter))
    }
}

/// How long a TLS session may be resumed: `maxAge` from its first full handshake (never extended by the
/// resumptions in between) and never past its client certificate's expiry. The C callbacks of
/// `SessionResumptionLimits` apply it to tickets and to the session cache.
struct SessionResumptionPolicy: Sendable {
    /// `tls.sessionMaxAge`.
    let maxAge: Duration

    /// The first instant at which a session from `origin` may no longer be resumed.
    func end(of origin: SessionOrigin) -> WallTime {
        let aged = origin.fullHandshake + maxAge
        // notAfter is inclusive, to the second: the certificate is good until the next second begins.
        guard let notAfter = origin.certificateNotAfter else { return aged }
        let expired = WallTime(millisecondsSince1970: (notAfter.secondsSince1970 &+ 1) &* 1_000)
        return min(aged, expired)
    }

    /// Whether a session from `origin` may be resumed at `now`.
    func allowsResumption(of origin: SessionOrigin, now: WallTime) -> Bool {
        now < end(of: origin)
    }

    /// What OpenSSL found in a ticket a client offered.
    enum Ticket: Equatable {
        /// No ticket, or one no key of ours opens: a full handshake (and a fresh ticket).
        case unusable
        /// Opened; `renew` when its key no longer seals (`TicketKeySchedule`); `origin` from its data.
        case opened(origin: SessionOrigin?, renew: Bool)
        /// OpenSSL could not process it (out of memory, an internal error).
        case failed
    }

    /// What to do with a ticket.
    enum Decision: Equatable {
        /// Resume the session; `renew`: seal a fresh ticket for it.
        case resume(renew: Bool)
        /// Ignore the ticket: a full handshake, with a fresh ticket at its end.
        case fullHandshake
        /// End the handshake.
        case abort
    }

    /// A ticket resumes only while its origin allows; one without an origin (sealed before origins were
    /// recorded, or by a foreign build) never resumes.
    func decide(_ ticket: Ticket, now: WallTime) -> Decision {
        switch ticket {
        case .unusable: return .fullHandshake
        case .failed: return .abort
        case .opened(let origin, let renew):
            guard let origin, allowsResumption(of: origin, now: now) else { return .fullHandshake }
            return .resume(renew: renew)
        }
    }

    /// The timeout, in seconds from `sessionTime` (seconds since 1970), of a session cache entry from `origin`,
    /// which a TLS 1.2 client resumes by id with OpenSSL's own check (resumable while the second it is in is at
    /// most `sessionTime + timeout`; TLS 1.2 keeps the full handshake's session time): the last whole second
    /// that ends by `end(of:)`.
    func cacheTimeout(of origin: SessionOrigin, sessionTime: Int64) -> Int64 {
        max(0, end(of: origin).millisecondsSince1970.floorDivided(by: 1_000) - 1 - sessionTime)
    }
}
