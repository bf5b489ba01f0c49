import AppStoreDomain
import ProtoCodec
import SignedData
import Simulator
import SubscriptionState
import Testing

/// Agreement: every simulator lifecycle's signed notifications, verified and decoded by the gateway, applied in
/// order to the reducer, give after every step what the simulator's Get All Subscription Statuses answers at that
/// instant, for every record; time moves both the same way between steps; one-time purchases and the customers'
/// entitlements follow.
@Suite struct AgreementTests {
    /// The notifications of every step applied in order; after each, every record the simulator reports (and no
    /// other) has its status, product, expiry, auto-renew and auto-renew product, ownership and access, needs no
    /// confirmation from Apple (no notification was missed), and each notification's `data.status` is its record's.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func afterEveryStepTheStateIsWhatAppleAnswers(_ name: String, _ environment: AppleEnvironment) throws {
        let run = try DecodedLifecycles.run(name, environment)
        var ledger = Ledger()
        for step in run.steps {
            let at = "\(name) (\(environment)) step \(step.index)"
            for delivery in step.notifications {
                try ledger.deliver(delivery, source: .notification, nowMillis: step.instant)
            }
            #expect(
                Set(ledger.records.keys) == Set(step.statuses.map { DecodedLifecycles.key($0, environment) }),
                "\(at): the records")
            for status in step.statuses {
                let key = DecodedLifecycles.key(status, environment)
                let record = try #require(ledger.records[key], "\(at): no record \(key.originalTransactionId)")
                let state = record.state(at: step.instant, policy: .defaults)
                Self.expectAgreement(state, status, "\(at)")
                // Nothing was missed, so nothing needs Apple: every expiry came with its notification.
                #expect(!state.needsConfirmation, "\(at): \(key.originalTransactionId) needs Apple's confirmation")
            }
            // Each notification's `data.status` is its record's status at its signedDate.
            for delivery in step.notifications where delivery.renewalInfo != nil {
                let payload = delivery.transaction.payload
                let key = SubscriptionKey(
                    bundleId: payload.bundleId, environment: payload.environment,
                    originalTransactionId: payload.originalTransactionId)
                #expect(
                    ledger.records[key]?.state(at: step.instant, policy: .defaults).status == delivery.status,
                    "\(at): \(delivery.label) says status \(delivery.status.rawValue)")
            }
        }
    }

    /// Between steps no notification arrives and time alone moves the state: at every date edge (each period's
    /// and grace period's end, a millisecond before it), halfway, and at the next step's instant before its
    /// notifications, and long after the last step, the reducer's status is the simulator's for every record.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func betweenStepsTimeMovesTheStateAsAppleDerivesIt(_ name: String, _ environment: AppleEnvironment) throws {
        let run = try DecodedLifecycles.run(name, environment)
        var ledger = Ledger()
        for (position, step) in run.steps.enumerated() {
            for delivery in step.notifications {
                try ledger.deliver(delivery, source: .notification, nowMillis: step.instant)
            }
            let next = position + 1 < run.steps.count ? run.steps[position + 1].instant : nil
            for instant in Self.probes(after: step, until: next) {
                for simulated in step.state.records {
                    let key = SubscriptionKey(
                        bundleId: DecodedLifecycles.app.bundleId, environment: environment.protoEnvironment,
                        originalTransactionId: simulated.originalTransactionId)
                    let state = ledger.records[key]?.state(at: instant, policy: .defaults)
                    #expect(
                        state?.status.rawValue == Int32(simulated.status(at: instant)),
                        "\(name) (\(environment)) after step \(step.index), at \(instant): \(key.originalTransactionId)"
                    )
                }
            }
        }
    }

    /// One-time purchases (non-consumables, non-renewing subscriptions) go to the customer's purchases: listed
    /// from their ONE_TIME_CHARGE on, revoked by a refund; and every customer's entitlements (each product unlocks
    /// its own and "all") are what the simulator's records and purchases grant, under both refund policies, at
    /// every step and probe instant.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func purchasesAndEntitlementsFollowTheSimulator(_ name: String, _ environment: AppleEnvironment) throws {
        let run = try DecodedLifecycles.run(name, environment)
        var ledger = Ledger()
        for (position, step) in run.steps.enumerated() {
            let at = "\(name) (\(environment)) step \(step.index)"
            for delivery in step.notifications {
                try ledger.deliver(delivery, source: .notification, nowMillis: step.instant)
            }
            let customers = ledger.customers
            let simulated = step.state.purchases.filter { $0.kind == .nonConsumable || $0.kind == .nonRenewing }
            let listed = customers[0].purchases.map(\.payload)
            #expect(listed.map(\.transactionId) == simulated.map(\.transactionId), "\(at): the purchases")
            #expect(
                listed.map { $0.revocationDateMillis == 0 ? nil : $0.revocationDateMillis }
                    == simulated.map(\.revocationDate),
                "\(at): revoked purchases")
            let membersBought = customers.dropFirst().contains { !$0.purchases.isEmpty }
            #expect(!membersBought, "\(at): a member bought nothing")
            let next = position + 1 < run.steps.count ? run.steps[position + 1].instant : nil
            for instant in [step.instant] + Self.probes(after: step, until: next) {
                for policy in run.policies {
                    let reduced = customers.map {
                        $0.entitlements(at: instant, policy: policy).map(ExpectedEntitlement.init)
                    }
                    let expected = step.state.expectedEntitlements(at: instant, policy: policy)
                    #expect(reduced == expected, "\(at), at \(instant), \(policy.refundPolicy)")
                }
            }
        }
    }

    /// Apple's read path: the simulator's Get All Subscription Statuses answer at each step, verified and decoded
    /// on its own and applied as an Apple read, says the same as the notifications (every fact, not only those the
    /// answer lists), alone (a record the gateway never heard of) and on top of the notifications (a refresh); a
    /// JWS met both in a notification and in the answer decodes to the same values both ways.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func applesAnswerSaysTheSameAsTheNotifications(_ name: String, _ environment: AppleEnvironment) throws {
        let run = try DecodedLifecycles.run(name, environment)
        var ledger = Ledger()
        var nested: [String: SignedTransaction] = [:]
        for step in run.steps {
            let at = "\(name) (\(environment)) step \(step.index)"
            for delivery in step.notifications {
                try ledger.deliver(delivery, source: .notification, nowMillis: step.instant)
                nested[delivery.transaction.jws] = delivery.transaction
            }
            var refreshed = ledger
            for (status, answer) in zip(step.statuses, step.answers) {
                if let same = nested[answer.transaction.jws] {
                    #expect(same == answer.transaction, "\(at): one JWS, two decodings")
                }
                var alone = Ledger()
                try alone.deliver(answer, source: .appleRead, nowMillis: step.instant)
                let key = DecodedLifecycles.key(status, environment)
                let record = try #require(alone.records[key], "\(at): the answer is of another record")
                let answered = record.state(at: step.instant, policy: .defaults)
                Self.expectAgreement(answered, status, "\(at) (answer)")
                let notified = try #require(ledger.records[key]).state(at: step.instant, policy: .defaults)
                #expect(Facts(answered) == Facts(notified), "\(at): \(key.originalTransactionId)")
                try refreshed.deliver(answer, source: .appleRead, nowMillis: step.instant)
            }
            for status in step.statuses {
                let key = DecodedLifecycles.key(status, environment)
                let record = try #require(refreshed.records[key])
                Self.expectAgreement(record.state(at: step.instant, policy: .defaults), status, "\(at) (refresh)")
            }
        }
    }

    /// Every lifecycle ran and decoded in both environments, and together they send every notification the
    /// simulator's lifecycles know.
    @Test func everyLifecycleIsCovered() throws {
        var labels: Set<String> = []
        for name in DecodedLifecycles.names {
            for environment in AppleEnvironment.allCases {
                let run = try DecodedLifecycles.run(name, environment)
                #expect(run.steps.count == Lifecycle.named(name)?.steps.count)
                let environments = Set(run.notifications.map(\.transaction.payload.environment))
                #expect(environments == [environment.protoEnvironment])
                labels.formUnion(run.notifications.map(\.label))
            }
        }
        #expect(DecodedLifecycles.names.count == 25)
        let expected: Set<String> = [
            "SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/RESUBSCRIBE", "OFFER_REDEEMED/INITIAL_BUY", "DID_RENEW",
            "DID_RENEW/BILLING_RECOVERY", "DID_FAIL_TO_RENEW", "DID_FAIL_TO_RENEW/GRACE_PERIOD", "GRACE_PERIOD_EXPIRED",
            "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED",
            "DID_CHANGE_RENEWAL_PREF/UPGRADE", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "PRICE_INCREASE/PENDING",
            "PRICE_INCREASE/ACCEPTED", "EXPIRED/VOLUNTARY", "EXPIRED/BILLING_RETRY", "EXPIRED/PRICE_INCREASE",
            "REFUND", "REFUND_DECLINED", "REFUND_REVERSED", "REVOKE", "RENEWAL_EXTENDED", "ONE_TIME_CHARGE",
        ]
        #expect(labels == expected)
    }

    /// What a state says about the subscription, whichever snapshots of it were read (not their signed dates).
    struct Facts: Equatable {
        var status: SubscriptionStatus
        var entitled: Bool
        var transactionId: String?
        var productId: String
        var subscriptionGroupIdentifier: String
        var expiresDateMillis: Int64?
        var gracePeriodExpiresDateMillis: Int64?
        var autoRenew: Bool
        var autoRenewProductId: String
        var inBillingRetry: Bool
        var revocationDateMillis: Int64?
        var ownershipType: InAppOwnershipType
        var appAccountToken: String

        init(_ state: DerivedSubscription) {
            status = state.status
            entitled = state.entitled
            transactionId = state.transaction?.payload.transactionId
            productId = state.productId
            subscriptionGroupIdentifier = state.subscriptionGroupIdentifier
            expiresDateMillis = state.expiresDateMillis
            gracePeriodExpiresDateMillis = state.gracePeriodExpiresDateMillis
            autoRenew = state.autoRenew
            autoRenewProductId = state.autoRenewProductId
            inBillingRetry = state.inBillingRetry
            revocationDateMillis = state.revocationDateMillis
            ownershipType = state.ownershipType
            appAccountToken = state.appAccountToken
        }
    }

    /// The reducer's state of one record agrees with the simulator's Get All Subscription Statuses item.
    static func expectAgreement(
        _ state: DerivedSubscription, _ status: LifecycleSubscriptionStatus, _ at: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let id = status.originalTransactionId
        #expect(state.status.rawValue == Int32(status.status), "\(at): \(id) status", sourceLocation: sourceLocation)
        #expect(state.productId == status.productId, "\(at): \(id) product", sourceLocation: sourceLocation)
        #expect(state.expiresDateMillis == status.expiresDate, "\(at): \(id) expiry", sourceLocation: sourceLocation)
        #expect(
            state.autoRenew == (status.autoRenewStatus == 1), "\(at): \(id) auto-renew",
            sourceLocation: sourceLocation)
        #expect(
            state.autoRenewProductId == status.autoRenewProductId, "\(at): \(id) auto-renew product",
            sourceLocation: sourceLocation)
        let ownership: InAppOwnershipType = status.inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased
        #expect(state.ownershipType == ownership, "\(at): \(id) ownership", sourceLocation: sourceLocation)
        #expect(
            state.entitled == (status.status == 1 || status.status == 4), "\(at): \(id) access",
            sourceLocation: sourceLocation)
        #expect(state.transaction?.jws != nil && state.renewalInfo?.jws != nil, sourceLocation: sourceLocation)
    }

    /// The instants after `step` and up to `next` (the next step's instant; nil after the last step) at which time
    /// alone may change something: every period and grace end of the simulator's records and the millisecond
    /// before, the midpoint, `next` itself; after the last step a day, 30, 61 and 400 days later.
    static func probes(after step: DecodedStep, until next: Int64?) -> [Int64] {
        let day = LifecycleCalendar.day
        let end = next ?? (step.instant + 400 * day)
        var instants: Set<Int64> = [end, step.instant + (end - step.instant) / 2]
        if next == nil { instants.formUnion([step.instant + day, step.instant + 30 * day, step.instant + 61 * day]) }
        for record in step.state.records {
            for edge in [record.current.expiresDate, record.renewal.gracePeriodExpiresDate].compactMap({ $0 }) {
                instants.formUnion([edge - 1, edge, edge + 1])
            }
        }
        return instants.filter { $0 > step.instant && $0 <= end }.sorted()
    }
}
