import GatewayFoundation

/// A gRPC server's life as state: not started, serving, asked to shut down (with a grace period), draining,
/// stopped with an outcome. `GRPCServer.serve()` waits on it for the shutdown request; `shutdown` waits on it
/// for the outcome when another thread is serving. Pure transitions; `ServerLifeSignal` adds the waiting.
struct ServerLife: Sendable, Hashable {
    enum State: Sendable, Hashable {
        case idle
        case serving
        /// `beginGracefulShutdown` was called; nobody is draining yet.
        case shutdownRequested(grace: Duration?)
        case draining
        case stopped(ShutdownOutcome)
    }

    private(set) var state: State = .idle

    /// Starting serves once; false when the server already started or stopped.
    mutating func start() -> Bool {
        guard state == .idle else { return false }
        state = .serving
        return true
    }

    /// Asks for a graceful shutdown; the first request's grace counts. False when one was asked or ran already.
    mutating func requestShutdown(grace: Duration?) -> Bool {
        switch state {
        case .idle, .serving:
            state = .shutdownRequested(grace: grace)
            return true
        case .shutdownRequested, .draining, .stopped:
            return false
        }
    }

    /// The caller drains now with the grace it returns; nil when another thread drains or drained already.
    mutating func beginDraining() -> Duration?? {
        guard case .shutdownRequested(let grace) = state else { return nil }
        state = .draining
        return .some(grace)
    }

    mutating func finish(_ outcome: ShutdownOutcome) { state = .stopped(outcome) }

    /// The outcome, once stopped.
    var outcome: ShutdownOutcome? {
        if case .stopped(let outcome) = state { outcome } else { nil }
    }

    var isShutdownRequested: Bool {
        if case .shutdownRequested = state { true } else { false }
    }
}

/// `ServerLife` under a condition signal: changes wake the threads waiting for the next state.
final class ServerLifeSignal: @unchecked Sendable {
    // Read and written only under `signal`'s lock.
    private var life = ServerLife()
    private let signal = ConditionSignal()

    func update<T>(_ body: (inout ServerLife) -> T) -> T {
        let result = signal.withLock { body(&life) }
        signal.signal()
        return result
    }

    /// Waits (without a deadline) until `ready` holds for the life.
    func wait(until ready: (ServerLife) -> Bool) {
        while !signal.wait(until: .now() + .seconds(3600), while: { !ready(life) }) {}
    }
}
