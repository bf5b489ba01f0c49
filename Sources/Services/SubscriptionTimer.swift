import AppStoreDomain
import GatewayFoundation
import NotificationStore
import SubscriptionState

/// The events time makes: when a subscription's period or grace period ends, its state changes with no snapshot
/// (`SubscriptionRecord.nextTransitionMillis`), and the store's cursors say when. The timer wakes at the earliest
/// one, confirms with Apple first what may have renewed unseen (the read's answer makes its own events, cause
/// "apple-read"), then makes the rest (cause "time"). Also prunes events past `subscriptions.eventRetention`.
///
/// Each transition is handled once per store: its cursor's next transition moves in the same commit as the
/// events it made, and handling a transition again makes nothing new.
struct SubscriptionTimer: Sendable {
    /// Subscriptions handled per wake-up before looking again.
    static let batch = 256
    /// The longest the timer sleeps: a snapshot may have moved a transition earlier (this process or another).
    static let longestSleep: Duration = .seconds(1)
    /// How long a confirmation read of Apple may take before the time event is made from what the state holds.
    static let confirmationWait: Duration = .seconds(10)
    /// How often events past their retention are deleted.
    static let pruneEvery: Duration = .seconds(3600)

    let states: SubscriptionStates
    let retention: Duration

    /// The fleet lease of the timer: one replica of a fleet asks Apple about, and makes, the events time makes.
    static let lease = "subscription-timer"

    /// Runs while this replica holds the timer's lease in `fleet` (`FleetLease.run`), until the task is cancelled.
    func run(fleet: FleetLease) async {
        await fleet.run(Self.lease) { await self.run() }
    }

    /// Runs until the task is cancelled; a store failure is retried after a pause.
    func run() async {
        var pause: Duration = .milliseconds(100)
        var nextPrune = states.clock.monotonicNow()
        while !Task.isCancelled {
            do throws(GatewayError) {
                if states.clock.monotonicNow() >= nextPrune {
                    try await prune()
                    nextPrune = states.clock.monotonicNow() + Self.pruneEvery
                }
                if try await step() == Self.batch { continue }
                pause = .milliseconds(100)
                try? await Task.sleep(for: try await sleep())
            } catch {
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// Handles the transitions due now (at most `batch`); returns how many.
    @discardableResult
    func step() async throws(GatewayError) -> Int {
        let keys: [SubscriptionKey]
        do {
            keys = try await states.store.dueTransitions(
                through: states.nowMillis, bundleIds: states.apps.apps.map(\.bundleId), limit: Self.batch)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        for key in keys { try await advance(key) }
        return keys.count
    }

    /// One due subscription: confirmed with Apple when its state needs it, then its time events made.
    private func advance(_ key: SubscriptionKey) async throws(GatewayError) {
        guard let app = states.apps.app(bundleId: key.bundleId) else { return }
        if let record = try await states.storedRecord(key),
            record.state(at: states.nowMillis, policy: states.policy(of: app)).needsConfirmation
        {
            do {
                _ = try await states.readFromApple(
                    app: app, originalTransactionId: key.originalTransactionId, environment: key.environment,
                    remaining: Self.confirmationWait)
            } catch .cancelled {
                throw .cancelled
            } catch {
                // No budget or Apple unreachable: the time event is made from what the state holds.
                states.metrics.staleAnswer(app: app.name)
            }
        }
        try await advance(
            key, context: SubscriptionEventContext(app: app.name, policy: states.policy(of: app), cause: "time"))
    }

    private func advance(_ key: SubscriptionKey, context: SubscriptionEventContext) async throws(GatewayError) {
        do {
            states.metrics.made(try await states.store.advance(key, context: context, nowMillis: states.nowMillis))
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
    }

    /// How long to sleep: until the next transition, at most `longestSleep`.
    private func sleep() async throws(GatewayError) -> Duration {
        let next: Int64?
        do {
            next = try await states.store.nextTransition(bundleIds: states.apps.apps.map(\.bundleId))
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        guard let next else { return Self.longestSleep }
        return min(Self.longestSleep, .milliseconds(max(1, next - states.nowMillis)))
    }

    private func prune() async throws(GatewayError) {
        do {
            _ = try await states.store.pruneEvents(occurredBefore: states.nowMillis - retention.wholeMilliseconds)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
    }
}
