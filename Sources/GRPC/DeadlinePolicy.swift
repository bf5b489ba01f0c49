import GatewayFoundation

/// The deadline every call runs under: the caller's `grpc-timeout` capped at `maximum`, or `default` when
/// the caller sent none, so no call (a request half-sent and never finished, say) lives on until the
/// connection's max age. A streaming call without `grpc-timeout` is the exception: a follower of the
/// notification stream may rightly stay for days, so `default` bounds only the wait for its request, and
/// once that is in the stream lives until the caller cancels it. Pure: tested without a server.
struct DeadlinePolicy: Sendable, Hashable {
    /// The timeout of a call without `grpc-timeout` (`limits.defaultDeadline`), already capped at `maximum`.
    let defaultTimeout: Duration
    /// The longest timeout a call gets, whatever it asked for (`limits.maxDeadline`).
    let maximumTimeout: Duration
    /// `defaultTimeout` in whole nanoseconds: most calls send no `grpc-timeout`, and their deadline is then
    /// one 64-bit addition to the clock reading instead of `Duration` arithmetic.
    private let defaultNanoseconds: Int64

    init(defaultTimeout: Duration, maximumTimeout: Duration) {
        self.maximumTimeout = maximumTimeout
        self.defaultTimeout = min(defaultTimeout, maximumTimeout)  // once here, not per call
        defaultNanoseconds = self.defaultTimeout.wholeNanoseconds
    }

    /// The timeout to apply for a caller that asked for `requested` (nil: no grpc-timeout).
    func timeout(requested: Duration?) -> Duration {
        guard let requested else { return defaultTimeout }
        return min(requested, maximumTimeout)
    }

    /// The deadline on the monotonic clock, saturating (a huge timeout is a deadline never reached).
    func deadline(requested: Duration?, now: MonotonicInstant) -> MonotonicInstant {
        guard let requested else { return now.advanced(byNanoseconds: defaultNanoseconds) }
        return now + min(requested, maximumTimeout)
    }

    /// The deadlines of one call: `call` ends the whole call (nil: none), `request` ends it only while its
    /// request has not fully arrived (nil: the call deadline covers that too).
    func deadlines(requested: Duration?, streaming: Bool, now: MonotonicInstant) -> (
        call: MonotonicInstant?, request: MonotonicInstant?
    ) {
        if streaming && requested == nil {
            return (nil, deadline(requested: nil, now: now))
        }
        return (deadline(requested: requested, now: now), nil)
    }
}
