import AppStoreDomain
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// Projects the notification log into the subscription state: every stored notification after the position the
/// state includes is verified again (as a follower of StreamNotifications verifies it), its signed transaction
/// and renewal info applied through the reducer, and the position moved past it. The log is the truth: the
/// webhook acknowledges Apple once the notification is stored, and a crash between the store and the state only
/// delays the state (the projection resumes from the saved position; applying a snapshot twice changes nothing).
///
/// A notification whose signed data does not verify now, or names another app, is left out of the state and
/// counted (`appstore_gateway_state_rejected_total`); the log keeps it as it was. What this replica's webhook has
/// just verified and decoded is handed over in memory (`deliveries`) instead of being verified again.
package final class SubscriptionProjector: Sendable {
    /// Entries read per step.
    static let batch = 256
    /// The longest a follower of a shared log (another replica may add entries) waits before reading again.
    static let sharedPoll: Duration = .milliseconds(250)

    private let states: SubscriptionStates
    private let log: any NotificationStore
    /// The events time makes (ends of periods and grace periods) and their pruning.
    let timer: SubscriptionTimer
    /// What this replica's webhook verified and decoded, taken instead of verifying its log entries again.
    package let deliveries: VerifiedDeliveries

    init(states: SubscriptionStates, log: any NotificationStore, retention: Duration) {
        self.states = states
        self.log = log
        self.timer = SubscriptionTimer(states: states, retention: retention)
        self.deliveries = VerifiedDeliveries(clock: states.clock)
    }

    /// The fleet lease of the projection: one replica of a fleet projects the shared log at a time.
    static let lease = "subscription-projector"

    /// Projects the log and runs the timer until the task is cancelled, each while this replica holds its lease in
    /// `fleet` (the projection and the timer are leased apart, so they may run on different replicas).
    package func run(fleet: FleetLease = .soleReplica) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await fleet.run(Self.lease) { await self.project() } }
            group.addTask { await self.timer.run(fleet: fleet) }
        }
    }

    /// Projects until the task is cancelled. A store failure is retried after a pause (the webhook answers 503
    /// meanwhile, so Apple retries what it could not store).
    func project() async {
        var pause: Duration = .milliseconds(50)
        while !Task.isCancelled {
            let seen = log.signal.generation
            do throws(GatewayError) {
                let moved = try await step()
                pause = .milliseconds(50)
                if moved { continue }
            } catch {
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                continue
            }
            await log.signal.wait(past: seen, timeout: log.isShared ? Self.sharedPoll : .seconds(5))
        }
    }

    /// How many log entries a page's decoding (of entries not handed over) takes on a thread of the shared pool
    /// before it lets others run.
    static let entriesBetweenYields = 8

    /// Projects up to one batch of the log (every app's entries, in order) and moves the projected position past
    /// it in the same commit as the changes and their events (none when `quiet`: a rebuild's replay); true when
    /// it read anything (more may follow at once).
    @discardableResult
    func step(quiet: Bool = false) async throws(GatewayError) -> Bool {
        let store = states.store
        let through: StorePosition
        let page: StorePage
        do {
            through = try await store.projectedThrough()
            page = try await log.entries(after: through, limit: Self.batch)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        guard page.through > through else { return false }
        var changes: [(app: App, change: SubscriptionChange)] = []
        var decoded = 0
        for entry in page.entries {
            let handed = deliveries.take(uuid: entry.notification.uuid, signedPayload: entry.notification.signedPayload)
            if handed == nil {
                // Decoding an entry the webhook did not hand over is CPU work on the shared pool (a verified
                // signature is not checked again, so nothing here suspends): let the webhook's calls waiting for a
                // thread run in between, every few such entries. A handed-over entry costs too little to yield for
                // (yielding for each would put the projection behind every delivery in flight, page after page).
                if decoded > 0, decoded % Self.entriesBetweenYields == 0 { await Task.yield() }
                decoded += 1
            }
            if let change = try await change(for: entry, handed: handed, quiet: quiet) { changes.append(change) }
        }
        let applied: [AppliedChange]
        do {
            applied = try await store.apply(changes.map(\.change), projectedThrough: page.through)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        for (index, outcome) in applied.enumerated() where outcome.changed && index < changes.count {
            states.metrics.changed(app: changes[index].app.name, source: "notification")
        }
        for outcome in applied { states.metrics.made(outcome.events) }
        return true
    }

    /// `appstore-gateway state rebuild`: deletes the state and projects the whole log again (after an upgrade of
    /// the rules, or to recover from a damaged state). What only Apple's API or an app had said is read from Apple
    /// again when next asked for. The replay makes no events; once it is over, each rebuilt subscription is
    /// compared with what its events last told consumers, and a difference is an event with cause "rebuild".
    /// Returns the subscriptions the rebuilt state holds.
    package func rebuild() async throws(GatewayError) -> Int {
        do {
            try await states.store.removeAll()
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        while try await step(quiet: true) {}
        var count = 0
        var last: SubscriptionKey?
        do {
            while case let keys = try await states.store.recordKeys(after: last, limit: Self.batch), !keys.isEmpty {
                for key in keys {
                    if let context = states.eventContext(
                        bundleId: key.bundleId, cause: SubscriptionEventContext.rebuild)
                    {
                        states.metrics.made(
                            try await states.store.advance(key, context: context, nowMillis: states.nowMillis))
                    }
                }
                count += keys.count
                last = keys.last
            }
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        return count
    }

    /// The change a stored notification makes (`handed`: its data as the webhook verified it, if it did): nil when
    /// it names no configured app, does not verify now (both counted), or carries no subscription data (TEST,
    /// summaries, external purchase tokens).
    private func change(for entry: StoredNotification, handed: NotificationData?, quiet: Bool)
        async throws(GatewayError)
        -> (app: App, change: SubscriptionChange)?
    {
        guard let app = states.apps.app(bundleId: entry.notification.bundleId) else {
            states.metrics.rejected(reason: "other_app")
            return nil
        }
        guard let environment = AppStoreEnvironment(rawValue: entry.notification.environment),
            let requirements = try? VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment)
        else {
            states.metrics.rejected(reason: "other_app")
            return nil
        }
        var verified = handed
        if verified == nil { verified = try await verifiedData(of: entry, app: app, requirements: requirements) }
        guard let data = verified else {
            states.metrics.rejected(reason: "unverified")
            return nil
        }
        let transaction = data.transaction.flatMap { payload in
            data.signedTransactionInfo.isEmpty
                ? nil : SignedTransaction(jws: data.signedTransactionInfo, payload: payload)
        }
        let renewal = data.renewalInfo.flatMap { payload in
            data.signedRenewalInfo.isEmpty ? nil : SignedRenewalInfo(jws: data.signedRenewalInfo, payload: payload)
        }
        guard transaction != nil || renewal != nil else { return nil }
        guard
            let change = states.change(
                transaction: transaction, renewal: renewal, source: .notification, app: app,
                cause: quiet ? nil : entry.notification.uuid)
        else { return nil }
        return (app, change)
    }

    /// The verified notification data of a log entry the webhook did not hand over: the entry verified again (its
    /// signature from the verified-signature cache while it is recent). nil when it does not verify now or carries
    /// no data; an OCSP responder out of reach throws (try again later rather than skip it).
    private func verifiedData(of entry: StoredNotification, app: App, requirements: VerificationRequirements)
        async throws(GatewayError) -> NotificationData?
    {
        let stored = entry.notification
        let result = await states.verifier.verifyOffLoopUnlessCached(
            stored.signedPayload, kind: .notification, requirements: requirements)
        if result.status == .retryableFailure {
            throw .revocationStatusUnavailable(app: app.name, problem: result.message)
        }
        guard result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result) else {
            return nil
        }
        return notification.data
    }
}
