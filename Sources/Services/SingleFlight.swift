import GatewayCore
import Synchronization

/// Coalesces identical concurrent calls: the first caller for a key starts the work, later callers with
/// the same key wait for its result instead of starting their own.
///
/// Each caller keeps its own cancellation (and so its own deadline, which the gRPC layer enforces by
/// cancelling the handler's task): a cancelled caller leaves at once with `.cancelled`, the others keep
/// waiting. The shared work is cancelled only when every caller has left. The work itself runs with
/// whatever the first caller gave it (its deadline, for GetHistory); a later caller with more time left
/// that sees the shared work end in DEADLINE_EXCEEDED simply runs again (see `GetHistoryHandler`).
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Outcome = Result<Value, GatewayError>

    /// One caller's seat on a flight.
    private final class Member: Sendable {
        private enum State {
            case joined
            case waiting(CheckedContinuation<Outcome, Never>)
            case done(Outcome)
            case left
        }
        private let state = Mutex(State.joined)

        func wait() async -> Outcome {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    switch state {
                    case .joined: state = .waiting(continuation)
                    case .done(let outcome): continuation.resume(returning: outcome)
                    case .left: continuation.resume(returning: .failure(.cancelled))
                    case .waiting: preconditionFailure("a flight member waits once")
                    }
                }
            }
        }

        func deliver(_ outcome: Outcome) {
            state.withLock { state in
                switch state {
                case .joined: state = .done(outcome)
                case .waiting(let continuation):
                    state = .done(outcome)
                    continuation.resume(returning: outcome)
                case .done, .left: break
                }
            }
        }

        func leave() {
            state.withLock { state in
                switch state {
                case .joined: state = .left
                case .waiting(let continuation):
                    state = .left
                    continuation.resume(returning: .failure(.cancelled))
                case .done, .left: break
                }
            }
        }
    }

    private struct Flight {
        let generation: Int
        var members: [ObjectIdentifier: Member]
        var task: Task<Void, Never>?
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var lastGeneration = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Shared calls currently running (for tests and metrics).
    var inFlight: Int { state.withLock { $0.flights.count } }

    /// The result of `work` for `key`, shared with identical concurrent callers; `joined` runs when this
    /// caller shares a flight already under way (for the coalesced-calls metric).
    func run(
        key: Key, joined: () -> Void = {}, _ work: @escaping @Sendable () async -> Outcome
    ) async -> Outcome {
        let member = Member()
        let (generation, shared): (Int, Bool) = state.withLock { state in
            if var flight = state.flights[key] {
                flight.members[ObjectIdentifier(member)] = member
                state.flights[key] = flight
                return (flight.generation, true)
            }
            state.lastGeneration += 1
            let generation = state.lastGeneration
            var flight = Flight(generation: generation, members: [ObjectIdentifier(member): member])
            flight.task = Task { [self] in
                let outcome = await work()
                finish(key: key, generation: generation, outcome)
            }
            state.flights[key] = flight
            return (generation, false)
        }
        if shared { joined() }
        return await withTaskCancellationHandler {
            await member.wait()
        } onCancel: {
            leave(key: key, generation: generation, member: member)
        }
    }

    private func finish(key: Key, generation: Int, _ outcome: Outcome) {
        let members: [Member] = state.withLock { state in
            guard state.flights[key]?.generation == generation else { return [] }
            return state.flights.removeValue(forKey: key).map { Array($0.members.values) } ?? []
        }
        for member in members { member.deliver(outcome) }
    }

    private func leave(key: Key, generation: Int, member: Member) {
        let abandoned: Task<Void, Never>? = state.withLock { state in
            func remove(_ flight: inout Flight) -> Bool {
                flight.members[ObjectIdentifier(member)] = nil
                return flight.members.isEmpty
            }
            guard var flight = state.flights[key], flight.generation == generation else { return nil }
            if remove(&flight) {
                state.flights[key] = nil
                return flight.task
            }
            state.flights[key] = flight
            return nil
        }
        member.leave()
        abandoned?.cancel()
    }
}
