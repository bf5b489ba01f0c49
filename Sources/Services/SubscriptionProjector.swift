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
/// counted (`appstore_gateway_state_rejected_total`); the log keeps it as it was.
public final class SubscriptionProjector: Sendable {
    /// Entries read per step.
    static let batch = 256
    /// The longest a follower of a shared log (another replica may add entries) waits before reading again.
    static let sharedPoll: Duration = .milliseconds(250)

    private let states: SubscriptionStates
    private let log: any NotificationStore

    init(states: SubscriptionStates, log: any NotificationStore) {
        self.states = states
        self.log = log
    }

    /// Projects until the task is cancelled. A store failure is retried after a pause (the webhook answers 503
    /// meanwhile, so Apple retries what it could not store).
    public func run() async {
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

    /// Projects up to one batch of every app's notifications; true when it read anything (more may follow).
    @discardableResult
    func step() async throws(GatewayError) -> Bool {
        var moved = false
        for app in states.apps.apps {
            moved = try await step(app) || moved
        }
        return moved
    }

    /// Up to one batch of `app`'s notifications (each app's projection has a position of its own: the log is read
    /// by bundle id, as its followers read it).
    private func step(_ app: App) async throws(GatewayError) -> Bool {
        let store = states.store
        let through: StorePosition
        let page: StorePage
        do {
            through = try await store.projectedThrough(bundleId: app.bundleId)
            page = try await log.entries(after: through, matching: StoreFilter(bundleId: app.bundleId), limit: Self.batch)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        for entry in page.entries {
            try await project(entry, app: app)
        }
        guard page.through > through else { return false }
        do {
            try await store.setProjectedThrough(page.through, bundleId: app.bundleId)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        return true
    }

    /// Until the state includes everything stored so far (tests, `state rebuild`).
    public func catchUp() async throws(GatewayError) {
        while try await step() {}
    }

    private func project(_ entry: StoredNotification, app: App) async throws(GatewayError) {
        guard let environment = AppStoreEnvironment(rawValue: entry.notification.environment),
            let requirements = try? VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment)
        else {
            states.metrics.rejected(reason: "other_app")
            return
        }
        let result = await states.verifier.verifyOffLoopUnlessCached(
            entry.notification.signedPayload, kind: .notification, requirements: requirements)
        if result.status == .retryableFailure {
            // An OCSP responder out of reach: nothing is known to be wrong; try again later rather than skip it.
            throw .revocationStatusUnavailable(app: app.name, problem: result.message)
        }
        guard result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result),
            let data = notification.data
        else {
            states.metrics.rejected(reason: "unverified")
            return
        }
        let transaction = data.transaction.flatMap { payload in
            data.signedTransactionInfo.isEmpty ? nil : SignedTransaction(jws: data.signedTransactionInfo, payload: payload)
        }
        let renewal = data.renewalInfo.flatMap { payload in
            data.signedRenewalInfo.isEmpty ? nil : SignedRenewalInfo(jws: data.signedRenewalInfo, payload: payload)
        }
        // A notification without a subscription's data (TEST, EXTERNAL_PURCHASE_TOKEN, summaries) changes nothing.
        guard transaction != nil || renewal != nil else { return }
        guard let applied = try await states.apply(
            transaction: transaction, renewal: renewal, source: .notification, app: app)
        else { return }
        if applied.changed { states.metrics.changed(app: app.name, source: "notification") }
    }
}
