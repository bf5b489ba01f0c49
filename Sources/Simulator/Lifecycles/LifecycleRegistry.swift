import AppStoreDomain
import Foundation
import GatewayFoundation

/// Bounds on the lifecycles a simulator keeps (`SimulatorConfiguration.lifecycleLimits`).
package struct LifecycleLimits: Sendable, Hashable {
    /// Lifecycles alive at once; starting one more is refused until one ends (`DELETE`). Default 1,000.
    package var maximumLive: Int
    /// Steps one lifecycle may perform, scripted and ad hoc together (and the longest script). Default 200.
    package var maximumSteps: Int

    /// The documented defaults.
    package static let defaults = LifecycleLimits(maximumLive: 1_000, maximumSteps: 200)

    /// Limits of your own (tests shrink them).
    package init(maximumLive: Int, maximumSteps: Int) {
        self.maximumLive = maximumLive
        self.maximumSteps = maximumSteps
    }
}

/// A refusal of the lifecycle control surface: a JSON body `{"errorCode", "errorMessage"}` whose HTTP status is the
/// code's first three digits, as the simulator's other control paths answer.
package struct LifecycleControlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A seven-digit code; its first three digits are the HTTP status.
    package var code: Int64
    /// What was wrong, naming the member or id at fault.
    package var message: String

    /// The code and the message.
    package var description: String { "\(code): \(message)" }

    static func invalid(_ message: String) -> Self { Self(code: 4_000_000, message: message) }
    static func notFound(_ message: String) -> Self { Self(code: 4_040_000, message: message) }
    static func conflict(_ message: String) -> Self { Self(code: 4_090_000, message: message) }
}

/// Where a lifecycle's notifications go.
struct LifecycleDelivery: Sendable {
    var url: URL
    var retries: Bool
    var timeFactor: Double
}

/// The live lifecycles of one simulator, by original transaction id, with an index from every transaction id they
/// made to their lifecycle (Get All Subscription Statuses and Get Transaction Info answer for those ids). A step is
/// computed and committed under the lock; signing and delivery happen outside it, one step of a lifecycle at a time.
final class LifecycleRegistry: Sendable {
    struct Live: Sendable {
        var name: String?
        var script: [LifecycleStep]
        var next = 0
        var performed = 0
        var state: LifecycleState
        var delivery: LifecycleDelivery?
        var busy = false
    }

    /// A committed step, ready to sign and deliver.
    struct Reserved: Sendable {
        var transition: LifecycleTransition
        var step: LifecycleStep
        var index: Int
        var remaining: Int
        var delivery: LifecycleDelivery?
    }

    private struct Entries {
        var live: [String: Live] = [:]
        var owner: [String: String] = [:]
        var started: UInt64 = 0
    }

    private let entries = Lock(Entries())
    let limits: LifecycleLimits

    init(limits: LifecycleLimits) { self.limits = limits }

    /// Registers a lifecycle starting at `start` and returns its state (its original transaction id is known).
    func start(
        name: String?, script: [LifecycleStep], bundleId: String, environment: AppleEnvironment, start: Int64,
        seed: UInt64, delivery: LifecycleDelivery?
    ) throws(LifecycleControlError) -> LifecycleState {
        guard script.count <= limits.maximumSteps else {
            throw .invalid("steps: at most \(limits.maximumSteps)")
        }
        let started: LifecycleState? = entries.withLock { entries in
            guard entries.live.count < limits.maximumLive else { return nil }
            let state = LifecycleState(
                bundleId: bundleId, environment: environment, number: entries.started, start: start, seed: seed)
            entries.started += 1
            entries.live[state.originalTransactionId] = Live(
                name: name, script: script, state: state, delivery: delivery)
            entries.owner[state.originalTransactionId] = state.originalTransactionId
            return state
        }
        guard let started else {
            throw LifecycleControlError(
                code: 4_290_001, message: "at most \(limits.maximumLive) live lifecycles; DELETE one first")
        }
        return started
    }

    /// Applies the next scripted step (or `adHoc`, which leaves the script where it is) and marks the lifecycle busy
    /// until `finish`. Refused when the step cannot happen or leaves `validity` (the signing certificate's, UNIX ms).
    func reserveStep(_ id: String, adHoc: LifecycleStep?, validity: ClosedRange<Int64>)
        throws(LifecycleControlError) -> Reserved
    {
        let outcome: Result<Reserved, LifecycleControlError> = entries.withLock { entries in
            guard var live = entries.live[id] else { return .failure(.notFound("no live lifecycle \(id)")) }
            guard !live.busy else {
                return .failure(LifecycleControlError(code: 4_090_001, message: "a step of \(id) is in progress"))
            }
            guard live.performed < limits.maximumSteps else {
                return .failure(.conflict("the lifecycle performed its \(limits.maximumSteps) steps"))
            }
            guard let step = adHoc ?? (live.next < live.script.count ? live.script[live.next] : nil) else {
                return .failure(.conflict("the lifecycle has no more steps (send one: {\"step\": …})"))
            }
            let transition: LifecycleTransition
            do {
                transition = try live.state.applying(step)
            } catch {
                return .failure(.conflict(String(describing: error)))
            }
            guard validity.contains(transition.state.now) else {
                return .failure(
                    .conflict(
                        "the step's instant \(transition.state.now) is outside the signing certificate's validity "
                            + "\(validity.lowerBound)…\(validity.upperBound)"))
            }
            if adHoc == nil { live.next += 1 }
            live.performed += 1
            live.state = transition.state
            live.busy = true
            entries.live[id] = live
            for transaction in transition.state.transactions { entries.owner[transaction.transactionId] = id }
            return .success(
                Reserved(
                    transition: transition, step: step, index: live.performed - 1,
                    remaining: live.script.count - live.next, delivery: live.delivery))
        }
        return try outcome.get()
    }

    /// Ends the step `reserveStep` began.
    func finish(_ id: String) {
        entries.withLock { $0.live[id]?.busy = false }
    }

    /// A live lifecycle by its original transaction id.
    func live(_ id: String) -> Live? { entries.withLock { $0.live[id] } }

    /// Removes a lifecycle; false if none was live under `id`.
    func end(_ id: String) -> Bool {
        entries.withLock { entries in
            guard let live = entries.live.removeValue(forKey: id) else { return false }
            entries.owner[id] = nil
            for transaction in live.state.transactions { entries.owner[transaction.transactionId] = nil }
            return true
        }
    }

    /// How many lifecycles are live.
    var count: Int { entries.withLock { $0.live.count } }

    /// The state of the lifecycle that made `transactionId`, if it is of this app and environment.
    func state(owning transactionId: String, bundleId: String, environment: AppleEnvironment) -> LifecycleState? {
        entries.withLock { entries in
            guard let id = entries.owner[transactionId], let state = entries.live[id]?.state,
                state.bundleId == bundleId, state.environment == environment,
                state.transaction(transactionId) != nil
            else { return nil }
            return state
        }
    }
}
