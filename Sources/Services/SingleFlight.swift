import AppStoreDomain
import GatewayFoundation

/// Coalesces identical concurrent calls: the first caller for a key does the work in its own task (no task is
/// started for it), later callers with the same key wait for its result instead of starting their own.
///
/// Each caller keeps its own cancellation (and so its own deadline, which the gRPC layer enforces by
/// cancelling the handler's task). A cancelled follower leaves at once with `.cancelled`; the others keep
/// waiting. The work runs with whatever its leader gave it (its deadline, for GetHistory) and in its task, so
/// a leader that is cancelled takes the work with it: its followers are told the flight was abandoned and go
/// again, one of them leading a new flight (see `SingleFlight+Deadline` for a shared call that ran out of its
/// leader's deadline).
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Outcome = Result<Value, GatewayError>

    /// How a flight ended for its followers.
    private enum Landing {
        /// The work's outcome.
        case settled(Outcome)
        /// The leader was cancelled before the work ended: the outcome is not an answer to anyone else.
        case abandoned
    }

    /// One follower's seat on a flight.
    private final class Member: Sendable {
        private enum State {
            case joined
            case waiting(CheckedContinuation<Landing, Never>)
            case done(Landing)
            case left
        }
        private let state = Lock(State.joined)

        // A continuation is never resumed under `state`'s lock: resuming takes the waiting task's status lock,
        // which a concurrent cancellation of that task holds while its handler calls `leave()` (and so waits
        // for `state`): resuming under the lock deadlocked the two threads (an event loop among them).

        /// The flight's landing; `.settled(.failure(.cancelled))` once this member left.
        func wait() async -> Landing {
            await withCheckedContinuation { continuation in
                let landing: Landing? = state.withLock { state in
                    switch state {
                    case .joined:
                        state = .waiting(continuation)
                        return nil
                    case .done(let landing): return landing
                    case .left: return .settled(.failure(.cancelled))
                    case .waiting: preconditionFailure("a flight member waits once")
                    }
                }
                if let landing { continuation.resume(returning: landing) }
            }
        }

        func deliver(_ landing: Landing) {
            let waiting: CheckedContinuation<Landing, Never>? = state.withLock { state in
                switch state {
                case .joined:
                    state = .done(landing)
                    return nil
                case .waiting(let continuation):
                    state = .done(landing)
                    return continuation
                case .done, .left: return nil
                }
            }
            waiting?.resume(returning: landing)
        }

        func leave() {
            let waiting: CheckedContinuation<Landing, Never>? = state.withLock { state in
                switch state {
                case .joined:
                    state = .left
                    return nil
                case .waiting(let continuation):
                    state = .left
                    return continuation
                case .done, .left: return nil
                }
            }
            waiting?.resume(returning: .settled(.failure(.cancelled)))
        }
    }

    private struct Flight {
        let generation: Int
        var followers: [ObjectIdentifier: Member] = [:]
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var lastGeneration = 0
    }

    /// What a caller is on a flight.
    private enum Seat {
        case leader(generation: Int)
        case follower(generation: Int, Member)
    }

    private let state = Lock(State())

    /// Flights a caller follows through abandoned ones before doing the work without sharing it.
    static var maxAbandonedFlights: Int { 3 }

    init() {}

    /// Shared calls currently running (for tests and metrics).
    var inFlight: Int { state.withLock { $0.flights.count } }

    /// The result of `work` for `key`, shared with identical concurrent callers; `joined` runs (once) when this
    /// caller follows a flight already under way (for the coalesced-calls metric).
    func run(key: Key, joined: () -> Void = {}, _ work: () async -> Outcome) async -> Outcome {
        var counted = false
        for _ in 0..<Self.maxAbandonedFlights {
            switch seat(for: key) {
            case .leader(let generation):
                let outcome = await work()
                land(key: key, generation: generation, Task.isCancelled ? .abandoned : .settled(outcome))
                return outcome
            case .follower(let generation, let member):
                if !counted {
                    counted = true
                    joined()
                }
                let landing = await withTaskCancellationHandler {
                    await member.wait()
                } onCancel: {
                    leave(key: key, generation: generation, member: member)
                }
                switch landing {
                case .settled(let outcome): return outcome
                case .abandoned: if Task.isCancelled { return .failure(.cancelled) }
                }
            }
        }
        // Leaders kept leaving: this caller does the work itself, unshared.
        return await work()
    }

    private func seat(for key: Key) -> Seat {
        state.withLock { state in
            if var flight = state.flights[key] {
                let member = Member()
                flight.followers[ObjectIdentifier(member)] = member
                state.flights[key] = flight
                return .follower(generation: flight.generation, member)
            }
            state.lastGeneration += 1
            state.flights[key] = Flight(generation: state.lastGeneration)
            return .leader(generation: state.lastGeneration)
        }
    }

    private func land(key: Key, generation: Int, _ landing: Landing) {
        let followers: [Member] = state.withLock { state in
            guard state.flights[key]?.generation == generation else { return [] }
            return state.flights.removeValue(forKey: key).map { Array($0.followers.values) } ?? []
        }
        for member in followers { member.deliver(landing) }
    }

    private func leave(key: Key, generation: Int, member: Member) {
        state.withLock { state in
            guard state.flights[key]?.generation == generation else { return }
            state.flights[key]?.followers[ObjectIdentifier(member)] = nil
        }
        member.leave()
    }
}
