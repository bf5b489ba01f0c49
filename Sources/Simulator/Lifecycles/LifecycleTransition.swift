/// Apple's notification for one event of a step, before signing: type, subtype, and the snapshots of the transaction
/// and renewal info it carries as of the step's instant (App Store Server Notifications V2, `data`).
package struct LifecycleNotification: Sendable, Hashable {
    /// Fixed by the lifecycle's seed, number and position (so runs repeat).
    package var notificationUUID: String
    /// Apple's `notificationType`.
    package var notificationType: String
    /// Apple's `subtype` (nil: none).
    package var subtype: String?
    /// The step's instant: the notification's `signedDate`, and that of its signed transaction and renewal info.
    package var signedDate: Int64
    /// The transaction the notification is about (an earlier period's for a refund of that period).
    package var transaction: SimulatedTransaction
    /// The subscription's renewal info (nil for a one-time purchase).
    package var renewal: SimulatedRenewalInfo?

    /// `data.status`: the subscription's status at `signedDate` (nil for a one-time purchase).
    package var status: Int? { renewal?.status }
}

/// The outcome of one step: the next state and what to send, in sending order.
package struct LifecycleTransition: Sendable, Hashable {
    /// The state after the step.
    package var state: LifecycleState
    /// The notifications to send, in sending order.
    package var notifications: [LifecycleNotification]
}

/// A notification decided by an event, built once the whole step is applied (so its snapshots are final).
struct PendingNotification {
    var type: String
    var subtype: String?
    var transactionId: String
    /// The record whose renewal info goes with it (nil for a one-time purchase).
    var originalTransactionId: String?
}

extension LifecycleState {
    /// The state after `step` and the notifications Apple sends for it; throws, leaving `self` as it is, when the
    /// step cannot happen now (`LifecycleStepError` says why).
    package func applying(_ step: LifecycleStep) throws(LifecycleStepError) -> LifecycleTransition {
        var next = self
        next.now = try instant(after: step.advance)
        let pending = try next.apply(step.event)
        next.refreshStatuses()
        var notifications: [LifecycleNotification] = []
        for item in pending {
            guard let transaction = next.transaction(item.transactionId) else { continue }
            let renewal = item.originalTransactionId.flatMap { id in
                next.records.first { $0.originalTransactionId == id }?.renewal
            }
            var random = DeterministicRandom(
                seed: seed, stream: "lifecycle/\(originalTransactionId)/notification/\(next.notificationCount)")
            next.notificationCount += 1
            notifications.append(
                LifecycleNotification(
                    notificationUUID: random.uuid(), notificationType: item.type, subtype: item.subtype,
                    signedDate: next.now, transaction: transaction, renewal: renewal))
        }
        return LifecycleTransition(state: next, notifications: notifications)
    }

    /// The instant `advance` leads to from `now` (never earlier than `now`).
    func instant(after advance: LifecycleAdvance) throws(LifecycleStepError) -> Int64 {
        let target: Int64
        switch advance {
        case .by(let milliseconds):
            guard milliseconds >= 0, now <= Int64.max - milliseconds else {
                throw LifecycleStepError("advance: a duration of 0 or more that keeps the date representable")
            }
            target = now + milliseconds
        case .toExpiry:
            guard let expires = subscription?.current.expiresDate else {
                throw LifecycleStepError("advance expiry: there is no subscription period yet")
            }
            target = expires
        case .toGracePeriodEnd:
            guard let grace = subscription?.renewal.gracePeriodExpiresDate else {
                throw LifecycleStepError("advance gracePeriodEnd: the subscription is not in a billing grace period")
            }
            target = grace
        case .toBillingRetryEnd:
            guard let record = subscription, record.renewal.isInBillingRetryPeriod == true,
                let expires = record.current.expiresDate
            else {
                throw LifecycleStepError("advance billingRetryEnd: the subscription is not in billing retry")
            }
            target = expires + LifecycleCalendar.billingRetry
        }
        return max(now, target)
    }

    private mutating func apply(_ event: LifecycleEvent) throws(LifecycleStepError) -> [PendingNotification] {
        switch event {
        case .buy(let product, let offer): return try buy(product, offer: offer)
        case .renew: return try renew()
        case .failToRenew(let gracePeriod): return try failToRenew(gracePeriod: gracePeriod)
        case .expireGracePeriod: return try expireGracePeriod()
        case .recover: return try recover()
        case .disableAutoRenew: return try setAutoRenew(false)
        case .enableAutoRenew: return try setAutoRenew(true)
        case .upgrade(let product): return try changeProduct(to: product, as: .upgrade)
        case .downgrade(let product): return try changeProduct(to: product, as: .downgrade)
        case .crossgrade(let product): return try changeProduct(to: product, as: .crossgrade)
        case .announcePriceIncrease: return try announcePriceIncrease()
        case .acceptPriceIncrease: return try acceptPriceIncrease()
        case .refund(let target): return try refund(target)
        case .declineRefund(let target): return try declineRefund(target)
        case .reverseRefund(let target): return try reverseRefund(target)
        case .shareWithFamily: return try shareWithFamily()
        case .revokeFamilySharing: return try revokeFamilySharing()
        case .extendRenewal(let days): return try extendRenewal(days: days)
        case .purchase(let product): return try purchase(product)
        case .expire: return try expire()
        }
    }

    /// Keeps every renewal info's `status` equal to what the dates say at `now`.
    private mutating func refreshStatuses() {
        if var record = subscription {
            record.renewal.status = record.status(at: now)
            subscription = record
        }
        for index in familyMembers.indices {
            familyMembers[index].renewal.status = familyMembers[index].status(at: now)
        }
    }
}
