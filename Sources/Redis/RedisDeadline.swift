import GatewayFoundation

/// The instant by which one connect or one pipeline must be done, fixed when it starts: every wait inside it
/// (the TCP connect, the TLS handshake, each write, each read) gets only what is left. A timeout per wait would
/// restart on every byte, so a server that answers one byte at a time could hold a command for ever.
package struct RedisDeadline: Sendable, Hashable {
    /// When the operation must be done.
    package let instant: MonotonicInstant
    /// The time it was given (for the error message).
    package let timeout: Duration

    /// The deadline `timeout` after `start`.
    package init(after timeout: Duration, from start: MonotonicInstant) {
        self.timeout = timeout
        instant = start + timeout
    }

    /// How long `poll` may wait at `now`: the milliseconds left, rounded up so that a wait never ends before
    /// the deadline (and never spins on a zero timeout); nil once the deadline has passed.
    package func pollMilliseconds(at now: MonotonicInstant) -> Int32? {
        let left = (instant - now).wholeNanoseconds
        guard left > 0 else { return nil }
        let milliseconds = left / 1_000_000 + (left % 1_000_000 == 0 ? 0 : 1)
        return Int32(clamping: milliseconds)
    }

    /// The failure of a wait that found the deadline passed.
    package func failure(doing what: String) -> RedisConnectionFailure {
        let milliseconds = timeout.wholeNanoseconds / 1_000_000
        return RedisConnectionFailure(
            kind: .timeout, message: "Redis \(what) timed out: not done within \(milliseconds) ms")
    }
}
