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
/// their timeout, maximum age with its grace, client PING strikes, and the two-step graceful close
/// (GOAWAY with the maximum stream id and a PING of its own, then the final GOAWAY when that PING returns
/// or after a timeout).
///
/// No I/O and no clock: `ServerConnection` reports what happened with the current time (nanoseconds of
/// the monotonic clock) and performs the returned `Action`s; `nextDeadline` tells it when to call `tick`.
struct ConnectionManagement: Sendable {
    /// The timers and limits, from `HTTP2Configuration` (nanoseconds; 0 disables where noted there).
    struct Policy: Sendable, Hashable {
        var idleTimeout: UInt64
        var keepaliveTime: UInt64
        var keepaliveTimeout: UInt64
        /// Already jittered per connection; 0 = never.
        var maxAge: UInt64
        var maxAgeGrace: UInt64
        var goawayPingTimeout: UInt64
        var minClientPingInterval: UInt64
        var permitClientPingWithoutCalls: Bool
        var maxPingStrikes: Int

        /// The policy of `configuration`, with the maximum age scaled by `ageJitter` (drawn in 0.9...1.1
        /// per connection so clients do not all reconnect at once).
        init(_ configuration: HTTP2Configuration, ageJitter: Double = 1) {
            let ms: UInt64 = 1_000_000
            idleTimeout = configuration.idleTimeoutMilliseconds.multipliedClamped(by: ms)
            keepaliveTime = configuration.keepaliveTimeMilliseconds.multipliedClamped(by: ms)
            keepaliveTimeout = configuration.keepaliveTimeoutMilliseconds.multipliedClamped(by: ms)
            let age = Double(configuration.maxConnectionAgeMilliseconds) * min(max(ageJitter, 0.5), 2) * 1e6
            maxAge = age >= 1.8e19 ? .max / 2 : UInt64(age)
            maxAgeGrace = configuration.maxConnectionAgeGraceMilliseconds.multipliedClamped(by: ms)
            goawayPingTimeout = configuration.goawayPingTimeoutMilliseconds.multipliedClamped(by: ms)
            minClientPingInterval = configuration.minClientPingIntervalMilliseconds.multipliedClamped(by: ms)
            permitClientPingWithoutCalls = configuration.permitClientPingWithoutCalls
            maxPingStrikes = configuration.maxPingStrikes
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
        case announced(ping: UInt64, since: UInt64, debug: String)
        /// The final GOAWAY went out: no new stream; the connection ends when its streams have.
        case closing
    }

    let policy: Policy
    private(set) var phase: Phase = .open
    private var lastRead: UInt64
    private var idleSince: UInt64?
    private var keepalivePing: (payload: UInt64, sentAt: UInt64)?
    private var ageDeadline: UInt64?
    private var closeDeadline: UInt64?
    private var lastClientPing: UInt64?
    private(set) var pingStrikes = 0
    /// PING payloads are numbered, so an acknowledgement says which PING it answers.
    private var lastPayload: UInt64 = 0

    /// A connection opened at `now`, without streams.
    init(policy: Policy, now: UInt64) {
        self.policy = policy
        lastRead = now
        idleSince = now
        if policy.maxAge > 0 { ageDeadline = now.addingClamped(policy.maxAge) }
    }

    /// Whether a graceful close has begun.
    var draining: Bool { phase != .open }

    /// Whether new streams are refused (the final GOAWAY went out).
    var refusesNewStreams: Bool { phase == .closing }

    // MARK: Events

    /// Bytes arrived from the peer.
    mutating func bytesRead(now: UInt64) { lastRead = now }

    /// A stream opened: the connection is not idle.
    mutating func streamOpened() { idleSince = nil }

    /// The last open stream closed at `now`.
    mutating func allStreamsClosed(now: UInt64) { idleSince = now }

    /// A response HEADERS or DATA frame went out: the client's PING budget starts again (grpc's rule: a
    /// server that sends is not bothered by a client's BDP or keepalive PINGs).
    mutating func responseFrameSent() { pingStrikes = 0 }

    /// The client sent a PING (nghttp2 answers it). Too often, or without calls when that is not permitted,
    /// is a strike; past `maxPingStrikes` the connection ends with ENHANCE_YOUR_CALM "too_many_pings".
    mutating func clientPinged(now: UInt64, openStreams: Int) -> [Action] {
        let tooSoon = lastClientPing.map { now > $0 && now - $0 < policy.minClientPingInterval } ?? false
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
    mutating func beginGracefulClose(now: UInt64, debug: String = "") -> [Action] {
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
    mutating func tick(now: UInt64) -> [Action] {
        var actions: [Action] = []
        if let deadline = ageDeadline, now >= deadline {
            ageDeadline = nil
            if phase == .open {
                closeDeadline = now.addingClamped(policy.maxAgeGrace)
                actions += beginGracefulClose(now: now, debug: "max_age")
            }
        }
        if let deadline = closeDeadline, now >= deadline {
            phase = .closing
            return actions + [.close]  // the grace after max_age is over: calls still open are cut off
        }
        if case .announced(_, let since, let debug) = phase, now >= since.addingClamped(policy.goawayPingTimeout) {
            phase = .closing
            actions.append(.sendGoaway(.noError, debug: debug))  // the PING never came back: go on without it
        }
        if phase == .open, policy.idleTimeout > 0, let since = idleSince, now >= since.addingClamped(policy.idleTimeout)
        {
            return actions + closeNow(.noError, debug: "max_idle")
        }
        if let ping = keepalivePing {
            if now >= ping.sentAt.addingClamped(policy.keepaliveTimeout) {
                return actions + closeNow(.noError, debug: "keepalive_timeout")
            }
        } else if policy.keepaliveTime > 0, now >= lastRead.addingClamped(policy.keepaliveTime) {
            let payload = nextPayload()
            keepalivePing = (payload, now)
            actions.append(.sendPing(payload))
        }
        return actions
    }

    /// The earliest instant `tick` may have something to do; nil when nothing is timed.
    var nextDeadline: UInt64? {
        var next = UInt64.max
        if let deadline = ageDeadline { next = min(next, deadline) }
        if let deadline = closeDeadline { next = min(next, deadline) }
        if case .announced(_, let since, _) = phase { next = min(next, since.addingClamped(policy.goawayPingTimeout)) }
        if phase == .open, policy.idleTimeout > 0, let since = idleSince {
            next = min(next, since.addingClamped(policy.idleTimeout))
        }
        if let ping = keepalivePing {
            next = min(next, ping.sentAt.addingClamped(policy.keepaliveTimeout))
        } else if policy.keepaliveTime > 0 {
            next = min(next, lastRead.addingClamped(policy.keepaliveTime))
        }
        return next == .max ? nil : next
    }

    private mutating func nextPayload() -> UInt64 {
        lastPayload &+= 1
        return lastPayload
    }
}

extension UInt64 {
    /// `self + other`, saturating at `UInt64.max`.
    func addingClamped(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// `self × other`, saturating at `UInt64.max`.
    func multipliedClamped(by other: UInt64) -> UInt64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }
}
