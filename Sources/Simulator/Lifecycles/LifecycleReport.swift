import AppStoreDomain
import GatewayFoundation

/// One notification of a step as sent: its values and its signed payload (the `signedPayload` a webhook receives).
package struct SignedLifecycleNotification: Sendable, Hashable {
    /// The notification's values before signing.
    package var notification: LifecycleNotification
    /// The notification's JWS (`ResponseBodyV2DecodedPayload`); a retry sends these same bytes.
    package var signedPayload: String
    /// The first delivery try's HTTP status (0: no answer; nil: not delivered).
    package var deliveryStatus: Int?
}

/// One subscription record at a step's instant, as Get All Subscription Statuses answers for it then.
package struct LifecycleSubscriptionStatus: Sendable, Hashable {
    /// The record's original transaction id (a family member's is its own).
    package var originalTransactionId: String
    /// Apple's status, 1–5.
    package var status: Int
    /// The current transaction's product, `autoRenewProductId`, `autoRenewStatus` and `expiresDate`.
    package var productId: String
    package var autoRenewProductId: String
    package var autoRenewStatus: Int
    package var expiresDate: Int64?
    /// `PURCHASED` for the purchaser, `FAMILY_SHARED` for a family member.
    package var inAppOwnershipType: String
    /// The current transaction signed at the instant (as in Get All Subscription Statuses' `lastTransactions`).
    package var signedTransactionInfo: String
    /// The renewal info signed at the instant.
    package var signedRenewalInfo: String
}

/// What one step did: where the clock is, the notifications sent, and what Get All Subscription Statuses answers
/// at that instant.
package struct LifecycleStepReport: Sendable, Hashable {
    /// The lifecycle's original transaction id.
    package var originalTransactionId: String
    /// The step's position among the steps performed so far (0 first).
    package var index: Int
    /// The step performed (scripted or ad hoc).
    package var step: LifecycleStep
    /// The simulated instant (UNIX ms): every `signedDate` of the step.
    package var instant: Int64
    /// The purchaser's subscription status (nil without one): what Get All Subscription Statuses says for it.
    package var status: Int?
    /// What the step sent, in sending order.
    package var notifications: [SignedLifecycleNotification]
    /// Every subscription record: the purchaser's first, then family members'.
    package var subscriptions: [LifecycleSubscriptionStatus]
    /// Scripted steps left after this one.
    package var remaining: Int

    /// The step's answer on the control surface (`POST /simulator/lifecycles/{id}/step`).
    package var json: OrderedJSON {
        var members: [(String, OrderedJSON)] = [
            ("originalTransactionId", .string(originalTransactionId)), ("index", .integer(Int64(index))),
            ("step", step.json), ("now", .integer(instant)), ("status", status.map { .integer(Int64($0)) } ?? .null),
        ]
        members.append(
            (
                "notifications",
                .array(
                    notifications.map { sent in
                        var item = JSONObjectBuilder()
                        item.add("notificationUUID", sent.notification.notificationUUID)
                        item.add("notificationType", sent.notification.notificationType)
                        item.add("subtype", sent.notification.subtype)
                        item.add("signedDate", sent.notification.signedDate)
                        item.add("transactionId", sent.notification.transaction.transactionId)
                        item.add("originalTransactionId", sent.notification.transaction.originalTransactionId)
                        item.add("status", sent.notification.status)
                        item.add("deliveryStatus", sent.deliveryStatus)
                        item.add("signedPayload", sent.signedPayload)
                        return item.object
                    })
            ))
        members.append(("subscriptions", .array(subscriptions.map(\.json))))
        members.append(("remaining", .integer(Int64(remaining))))
        members.append(("done", .bool(remaining == 0)))
        return .object(members)
    }
}

extension LifecycleSubscriptionStatus {
    init(_ record: SubscriptionRecord, signer: SignedPayloads, at instant: Int64) throws(AppleRejection) {
        originalTransactionId = record.originalTransactionId
        status = record.renewal.status
        productId = record.current.productId
        autoRenewProductId = record.renewal.autoRenewProductId
        autoRenewStatus = record.renewal.autoRenewStatus
        expiresDate = record.current.expiresDate
        inAppOwnershipType = record.current.inAppOwnershipType
        signedTransactionInfo = try signer.transaction(record.current, signedDate: instant)
        signedRenewalInfo = try signer.renewal(record.renewal, signedDate: instant)
    }

    var json: OrderedJSON {
        var item = JSONObjectBuilder()
        item.add("originalTransactionId", originalTransactionId)
        item.add("status", status)
        item.add("productId", productId)
        item.add("autoRenewProductId", autoRenewProductId)
        item.add("autoRenewStatus", autoRenewStatus)
        item.add("expiresDate", expiresDate)
        item.add("inAppOwnershipType", inAppOwnershipType)
        item.add("signedTransactionInfo", signedTransactionInfo)
        item.add("signedRenewalInfo", signedRenewalInfo)
        return item.object
    }
}

extension SignedPayloads {
    /// A lifecycle notification's `signedPayload`: `data` with the transaction and renewal info signed at the
    /// notification's `signedDate`, like the notification itself.
    func notification(_ notification: LifecycleNotification) throws(AppleRejection) -> String {
        var data = JSONObjectBuilder()
        data.add("appAppleId", app.appAppleId)
        data.add("bundleId", app.bundleId)
        data.add("bundleVersion", "1.0")
        data.add("environment", environment.appleName)
        data.add(
            "signedTransactionInfo", try transaction(notification.transaction, signedDate: notification.signedDate))
        if let renewal = notification.renewal {
            data.add("signedRenewalInfo", try self.renewal(renewal, signedDate: notification.signedDate))
            data.add("status", renewal.status)
        }
        var payload = JSONObjectBuilder()
        payload.add("notificationType", notification.notificationType)
        payload.add("subtype", notification.subtype)
        payload.add("notificationUUID", notification.notificationUUID)
        payload.add("data", data.object)
        payload.add("version", "2.0")
        payload.add("signedDate", notification.signedDate)
        return try sign(payload.object)
    }

    /// The report of `transition`, every payload signed (not yet delivered).
    func report(
        of transition: LifecycleTransition, step: LifecycleStep, index: Int, remaining: Int
    ) throws(AppleRejection) -> LifecycleStepReport {
        let state = transition.state
        var notifications: [SignedLifecycleNotification] = []
        for notification in transition.notifications {
            notifications.append(
                SignedLifecycleNotification(
                    notification: notification, signedPayload: try self.notification(notification),
                    deliveryStatus: nil))
        }
        var subscriptions: [LifecycleSubscriptionStatus] = []
        for record in state.records {
            subscriptions.append(try LifecycleSubscriptionStatus(record, signer: self, at: state.now))
        }
        return LifecycleStepReport(
            originalTransactionId: state.originalTransactionId, index: index, step: step, instant: state.now,
            status: state.status, notifications: notifications, subscriptions: subscriptions, remaining: remaining)
    }
}

/// Runs lifecycles without a server or a clock: every step's notifications signed as the simulator signs them, for
/// tests that feed them to a state in any order.
package enum SignedLifecycle {
    /// Why a run stopped: a step that cannot happen, or a payload that could not be signed.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        /// The step (0 first) at fault.
        package var step: Int
        /// Why.
        package var description: String
    }

    /// Every step of `lifecycle` for `app` in `environment`, from `start` (UNIX ms), signed by `pki`. `number` fixes
    /// the ids (two runs with different numbers share none) and `seed` the notification UUIDs.
    package static func run(
        _ lifecycle: Lifecycle, app: SimulatedApp, environment: AppleEnvironment = .sandbox, pki: SimulatorPKI,
        start: Int64, number: UInt64 = 0, seed: UInt64 = 0
    ) throws(Failure) -> [LifecycleStepReport] {
        let signer = SignedPayloads(pki: pki, app: app, environment: environment, memo: SignatureMemo(capacity: 4_096))
        var state = LifecycleState(
            bundleId: app.bundleId, environment: environment, number: number, start: start, seed: seed)
        var reports: [LifecycleStepReport] = []
        for (index, step) in lifecycle.steps.enumerated() {
            do {
                let transition = try state.applying(step)
                reports.append(
                    try signer.report(
                        of: transition, step: step, index: index, remaining: lifecycle.steps.count - index - 1))
                state = transition.state
            } catch let error as LifecycleStepError {
                throw Failure(step: index, description: error.description)
            } catch {
                throw Failure(step: index, description: "signing failed: \(error)")
            }
        }
        return reports
    }
}
