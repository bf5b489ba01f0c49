import GatewayFoundation

/// How a graceful shutdown ended.
public enum ShutdownOutcome: Sendable, Hashable {
    /// Every connection closed within the grace period: no call was cut short.
    case drained
    /// The grace period ended first: the calls still running ended with UNAVAILABLE and the connections
    /// still open were closed.
    case callsEnded
}

/// The steps of `GRPCServer.shutdown`, decided from the connections the server holds and the time, with no
/// I/O (the server does each step, then asks again): wait for the last connection to close until the grace
/// period ends; then end the calls still running, and wait for their statuses to reach the sockets until the
/// flush period ends; then stop (which closes whatever is still open).
struct GracefulShutdown: Sendable, Hashable {
    /// What the server does next.
    enum Step: Sendable, Hashable {
        /// Wait until the server holds no connection, or until the instant (`HTTP2Server.waitUntilIdle`).
        case wait(until: MonotonicInstant)
        /// End every call still running with UNAVAILABLE.
        case endCalls
        /// Stop the server's loops, closing what is still open; the shutdown is over.
        case stop(ShutdownOutcome)
    }

    private enum Phase: Sendable, Hashable {
        /// GOAWAY sent, calls running, until the instant (the grace period's end).
        case draining(until: MonotonicInstant)
        /// The remaining calls were ended; their statuses are written until the instant.
        case flushing(until: MonotonicInstant)
        case stopped(ShutdownOutcome)
    }

    private var phase: Phase
    private let flush: Duration

    /// A shutdown that began at `now` (GOAWAY sent) with `grace` for the calls in flight, then `flush` for the
    /// statuses of the calls it ended.
    init(grace: Duration, flush: Duration = .milliseconds(500), now: MonotonicInstant) {
        phase = .draining(until: now + max(grace, .zero))
        self.flush = max(flush, .zero)
    }

    /// The next step, given the connections the server holds now (established or in their handshake).
    mutating func next(heldConnections: Int, now: MonotonicInstant) -> Step {
        switch phase {
        case .draining(let deadline):
            if heldConnections == 0 { return stop(.drained) }
            if now < deadline { return .wait(until: deadline) }
            phase = .flushing(until: now + flush)
            return .endCalls
        case .flushing(let deadline):
            if heldConnections == 0 || now >= deadline { return stop(.callsEnded) }
            return .wait(until: deadline)
        case .stopped(let outcome):
            return .stop(outcome)
        }
    }

    private mutating func stop(_ outcome: ShutdownOutcome) -> Step {
        phase = .stopped(outcome)
        return .stop(outcome)
    }
}
