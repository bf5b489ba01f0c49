import GatewayFoundation

/// An HTTP/2 error code (RFC 9113 §7) of the GOAWAYs `ConnectionManagement` decides.
/// An HTTP/2 error code (RFC 9113 §7), in RST_STREAM and GOAWAY frames. A struct, not an enum: a peer may send
/// any 32-bit value, and it must be carried as received.
public struct HTTP2ErrorCode: RawRepresentable, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
}

/// The connection-level rules of one HTTP/2 connection, as a value: idle timeout, keepalive PINGs and
/// their timeout, maximum age with its grace, client PING strikes, the deadline of a connection that has made
/// no admitted call, the deadline of a request's header block, and the two-step graceful close
/// (GOAWAY with the maximum stream id and a PING of its own, then the final GOAWAY when that PING returns
/// or after a timeout).
///
/// No I/O and no clock: `ServerConnection` reports what happened with the current time (an instant of the
/// monotonic clock) and performs the returned `Action`s; `nextDeadline` tells it when to call `tick`.
struct ConnectionManagement: Sendable {
    /// The timers and limits, from `HTTP2Configuration` (zero here where it says nil: never).
    struct Policy: Sendable, Hashable {
        var idleTimeout: Duration
        var keepaliveTime: Duration
        var keepaliveTimeout: Duration
        /// Already jittered per connection; zero = never.
        var maxAge: Duration
        var maxAgeGrace: Duration
        var goawayPingTimeout: Duration
        var minClientPingInterval: Duration
        var permitClientPingWithoutCalls: Bool
        var maxPingStrikes: Int
        /// From the client's preface; zero = never.
        var unauthenticatedIdleTimeout: Duration
        var headerBlockTimeout: Duration

        /// The policy of `configuration`, with the maximum age scaled by `ageJitter` (drawn in 0.9...1.1
        /// per connection so clients do not all reconnect at once).
        init(_ configuration: HTTP2Configuration, ageJitter: Double = 1) {
            idleTimeout = configuration.idleTimeout ?? .zero
            keepaliveTime = configuration.keepaliveTime ?? .zero
            keepaliveTimeout = configuration.keepaliveTimeout
            // In whole nanoseconds, capped at half the instants' range: a huge age stays a (far) deadline.
            let age = Double((configuration.maxConnectionAge ?? .zero).wholeNanoseconds) * min(max(ageJitter, 0.5), 2)
            maxAge = .nanoseconds(min(Int64(saturating: age) ?? 0, .max / 2))
            maxAgeGrace = configuration.maxConnectionAgeGrace
            goawayPingTimeout = configuration.goawayPingTimeout
            minClientPingInterval = configuration.minClientPingInterval
            permitClientPingWithoutCalls = configuration.permitClientPingWithoutCalls
            maxPingStrikes = configuration.maxPingStrikes
            unauthenticatedIdleTimeout = configuration.unauthenticatedIdleTimeout ?? .zero
            headerBlockTimeout = configuration.headerBlockTimeout
        }
    }

    /// What the connection must do.
    enum Action: Sendable, Hashable {
        /// Send a PING with this opaque payload.
        case sendPing(UInt64)
        /// Send GOAWAY with the maximum stream id: new streams may still arrive while it travels.
        case sendShutdownNotice
        /// Send the final GOAWAY (last stream id actually processed) with this code and debug text.
        case sendGoaway(HTTP2ErrorCode, debug: String)
        /// Write what is queued and close the socket.
        case close
    }

    /// Where the connection is in its life.
    enum Phase: Sendable, Hashable {
        /// Accepting streams.
        case open
        /// The shutdown notice and its PING (`ping`) went out at `since`; streams still arrive.
        case announced(ping: UInt64, since: MonotonicInstant, debug: String)
        /// The final GOAWAY went out: no new stream; the connection ends when its streams have.
        case closing
    }

    let policy: Policy
    private(set) var phase: Phase = .open
    private var lastRead: MonotonicInstant
    private var idleSince: MonotonicInstant?
    private var keepalivePing: (payload: UInt64, sentAt: MonotonicInstant)?
    private var ageDeadline: MonotonicInstant?
    private var closeDeadline: MonotonicInstant?
    private var lastClientPing: MonotonicInstant?
    private(set) var pingStrikes = 0
    /// Until the connection's first admitted call: when it is closed without one (nil once admitted, or
    /// before the preface).
    private var unauthenticatedDeadline: MonotonicInstant?
    private(set) var admitted = false
    /// When the request header block being received began (nil between blocks).
    private var headerBlockSince: MonotonicInstant?
    /// PING payloads are numbered, so an acknowledgement says which PING it answers.
    private var lastPayload: UInt64 = 0

    /// A connection opened at `now`, without streams.
    init(policy: Policy, now: MonotonicInstant) {
        self.policy = policy
        lastRead = now
        idleSince = now
        if policy.maxAge > .zero { ageDeadline = now + policy.maxAge }
    }

    /// Whether a graceful close has begun.
    var draining: Bool { phase != .open }

    /// Whether new streams are refused (the final GOAWAY went out).
    var refusesNewStreams: Bool { phase == .closing }

    // MARK: Events

    /// Bytes arrived from the peer.
    mutating func bytesRead(now: MonotonicInstant) { lastRead = now }

    /// The client's preface and first SETTINGS arrived at `now`: from here it has `unauthenticatedIdleTimeout`
    /// to make an admitted call.
    mutating func prefaceReceived(now: MonotonicInstant) {
        guard !admitted, unauthenticatedDeadline == nil, policy.unauthenticatedIdleTimeout > .zero else { return }
        unauthenticatedDeadline = now + policy.unauthenticatedIdleTimeout
    }

    /// A call of the connection was admitted (its caller passed the server's guard): the connection is no longer
    /// closed for having made none.
    mutating func callAdmitted() {
        admitted = true
        unauthenticatedDeadline = nil
    }

    /// A request's header block began at `now` (a HEADERS frame): it must be complete (its END_HEADERS frame
    /// received in full) within `headerBlockTimeout`. Until then HTTP/2 lets no other frame through, and the
    /// stream it opens keeps the connection from counting as idle.
    mutating func headerBlockStarted(now: MonotonicInstant) { headerBlockSince = now }

    /// The header block ended: complete, or its stream was closed.
    mutating func headerBlockEnded() { headerBlockSince = nil }

    /// A stream opened: the connection is not idle.
    mutating func streamOpened() { idleSince = nil }

    /// The last open stream closed at `now`.
    mutating func allStreamsClosed(now: MonotonicInstant) { idleSince = now }

    /// A response HEADERS or DATA frame went out: the client's PING budget starts again (grpc's rule: a
    /// server that sends is not bothered by a client's BDP or keepalive PINGs).
    mutating func responseFrameSent() { pingStrikes = 0 }

    /// The client sent a PING (nghttp2 answers it). Too often, or without calls when that is not permitted,
    /// is a strike; past `maxPingStrikes` the connection ends with ENHANCE_YOUR_CALM "too_many_pings".
    mutating func clientPinged(now: MonotonicInstant, openStreams: Int) -> [Action] {
        let tooSoon = lastClientPing.map { now > $0 && now < $0 + policy.minClientPingInterval } ?? false
        let withoutCalls = openStreams == 0 && !policy.permitClientPingWithoutCalls
        lastClientPing = now
        guard tooSoon || withoutCalls else { return [] }
        pingStrikes += 1
        guard pingStrikes > policy.maxPingStrikes else { return [] }
        return closeNow(.enhanceYourCalm, debug: "too_many_pings")
    }

    /// The peer acknowledged the PING with `payload`. Only the graceful close's own PING ends its first
    /// step; a keepalive PING's acknowledgement only proves the peer alive.
    mutating func pingAcknowledged(payload: UInt64) -> [Action] {
        if let ping = keepalivePing, ping.payload == payload { keepalivePing = nil }
        guard case .announced(let ping, _, let debug) = phase, ping == payload else { return [] }
        phase = .closing
        return [.sendGoaway(.noError, debug: debug)]
    }

    /// Starts a graceful close (RFC 9113 §6.8) with `debug` as the final GOAWAY's text; nothing when one
    /// has begun already.
    mutating func beginGracefulClose(now: MonotonicInstant, debug: String = "") -> [Action] {
        guard phase == .open else { return [] }
        let payload = nextPayload()
        phase = .announced(ping: payload, since: now, debug: debug)
        return [.sendShutdownNotice, .sendPing(payload)]
    }

    /// Ends the connection at once with a final GOAWAY (`code`, `debug`).
    mutating func closeNow(_ code: HTTP2ErrorCode, debug: String) -> [Action] {
        phase = .closing
        return [.sendGoaway(code, debug: debug), .close]
    }

    /// What is due at `now`: call it at `nextDeadline` (earlier calls are harmless).
    mutating func tick(now: MonotonicInstant) -> [Action] {
        if let since = headerBlockSince, now >= since + policy.headerBlockTimeout {
            headerBlockSince = nil
            return closeNow(.noError, debug: "header_block_timeout")
        }
        var actions: [Action] = []
        if let deadline = unauthenticatedDeadline, now >= deadline {
            unauthenticatedDeadline = nil
            guard idleSince == nil else { return closeNow(.noError, debug: "unauthenticated_idle") }
            // Calls in flight (a prober's health Check on a connection it keeps) may end within as long again;
            // one that never ends (a health Watch) is cut off then.
            let cutOff = now + policy.unauthenticatedIdleTimeout
            closeDeadline = closeDeadline.map { min($0, cutOff) } ?? cutOff
            actions += beginGracefulClose(now: now, debug: "unauthenticated_idle")
        }
        if let deadline = ageDeadline, now >= deadline {
            ageDeadline = nil
            if phase == .open {
                closeDeadline = now + policy.maxAgeGrace
                actions += beginGracefulClose(now: now, debug: "max_age")
            }
        }
        if let deadline = closeDeadline, now >= deadline {
            phase = .closing
            return actions + [.close]  // the grace after max_age is over: calls still open are cut off
        }
        if case .announced(_, let since, let debug) = phase, now >= since + policy.goawayPingTimeout {
            phase = .closing
            actions.append(.sendGoaway(.noError, debug: debug))  // the PING never came back: go on without it
        }
        if phase == .open, policy.idleTimeout > .zero, let since = idleSince, now >= since + policy.idleTimeout {
            return actions + closeNow(.noError, debug: "max_idle")
        }
        if let ping = keepalivePing {
            if now >= ping.sentAt + policy.keepaliveTimeout {
                return actions + closeNow(.noError, debug: "keepalive_timeout")
            }
        } else if policy.keepaliveTime > .zero, now >= lastRead + policy.keepaliveTime {
            let payload = nextPayload()
            keepalivePing = (payload, now)
            actions.append(.sendPing(payload))
        }
        return actions
    }

    /// The earliest instant `tick` may have something to do; nil when nothing is timed.
    var nextDeadline: MonotonicInstant? {
        var next = ageDeadline
        if let since = headerBlockSince { next = Self.earlier(next, since + policy.headerBlockTimeout) }
        if let deadline = unauthenticatedDeadline { next = Self.earlier(next, deadline) }
        if let deadline = closeDeadline { next = Self.earlier(next, deadline) }
        if case .announced(_, let since, _) = phase { next = Self.earlier(next, since + policy.goawayPingTimeout) }
        if phase == .open, policy.idleTimeout > .zero, let since = idleSince {
            next = Self.earlier(next, since + policy.idleTimeout)
        }
        if let ping = keepalivePing {
            next = Self.earlier(next, ping.sentAt + policy.keepaliveTimeout)
        } else if policy.keepaliveTime > .zero {
            next = Self.earlier(next, lastRead + policy.keepaliveTime)
        }
        // A deadline that saturated (a huge timeout) is never reached: nothing to wait for.
        guard let next, next.nanoseconds < .max else { return nil }
        return next
    }

    private static func earlier(_ current: MonotonicInstant?, _ candidate: MonotonicInstant) -> MonotonicInstant {
        guard let current else { return candidate }
        return min(current, candidate)
    }

    private mutating func nextPayload() -> UInt64 {
        lastPayload &+= 1
        return lastPayload
    }
}
