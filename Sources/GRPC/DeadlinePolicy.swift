/// The deadline every call runs under: the caller's `grpc-timeout` capped at `maximum`, or `default` when
/// the caller sent none, so no call (a request half-sent and never finished, say) lives on until the
/// connection's max age. A streaming call without `grpc-timeout` is the exception: a follower of the
/// notification stream may rightly stay for days, so `default` bounds only the wait for its request, and
/// once that is in the stream lives until the caller cancels it. Pure: tested without a server.
struct DeadlinePolicy: Sendable, Hashable {
    /// The timeout of a call without `grpc-timeout`, in nanoseconds (`limits.defaultDeadline`).
    var defaultNanoseconds: UInt64
    /// The longest timeout a call gets, whatever it asked for (`limits.maxDeadline`).
    var maximumNanoseconds: UInt64

    init(defaultMilliseconds: UInt64, maximumMilliseconds: UInt64) {
        let (defaultNanos, overflow1) = defaultMilliseconds.multipliedReportingOverflow(by: 1_000_000)
        let (maximumNanos, overflow2) = maximumMilliseconds.multipliedReportingOverflow(by: 1_000_000)
        defaultNanoseconds = overflow1 ? .max : defaultNanos
        maximumNanoseconds = overflow2 ? .max : maximumNanos
    }

    /// The timeout to apply, in nanoseconds, for a caller that asked for `requested` (nil: no grpc-timeout).
    func timeout(requested: UInt64?) -> UInt64 {
        min(requested ?? defaultNanoseconds, maximumNanoseconds)
    }

    /// The deadline on the monotonic clock, saturating.
    func deadline(requested: UInt64?, now: UInt64) -> UInt64 {
        let (sum, overflow) = now.addingReportingOverflow(timeout(requested: requested))
        return overflow ? .max : sum
    }

    /// The deadlines of one call: `call` ends the whole call (nil: none), `request` ends it only while its
    /// request has not fully arrived (nil: the call deadline covers that too).
    func deadlines(requested: UInt64?, streaming: Bool, now: UInt64) -> (call: UInt64?, request: UInt64?) {
        if streaming && requested == nil {
            return (nil, deadline(requested: nil, now: now))
        }
        return (deadline(requested: requested, now: now), nil)
    }
}
