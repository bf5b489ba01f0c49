import ProtoCodec
import SubscriptionState

/// Realistic lifecycles as Apple would sign them: each step is what one notification (or one read of Apple's
/// API) carries, with increasing signedDates, and the status Apple would report right after it.
struct Lifecycle {
    /// One delivery: the snapshots it carries, and Apple's status at `at`.
    struct Step {
        var transaction: SignedTransaction?
        var renewalInfo: SignedRenewalInfo?
        var at: Int64
        var expected: SubscriptionStatus
    }

    var name: String
    var key: SubscriptionKey
    var steps: [Step]

    /// Every instant where a state may differ: each step, each date ±1 ms, and long after the end.
    var probes: [Int64] {
        var instants = Set<Int64>()
        for step in steps {
            instants.insert(step.at)
            let dates = [
                step.transaction?.payload.expiresDateMillis, step.renewalInfo?.payload.gracePeriodExpiresDateMillis,
            ]
            for date in dates.compactMap({ $0 }) where date != 0 {
                instants.formUnion([date - 1, date, date + 1])
            }
        }
        instants.insert(Snapshots.at(10_000))
        return instants.sorted()
    }
}

extension Lifecycle {
    typealias S = Snapshots

    /// Buy with a trial, renew three times, fail to renew into grace, recover, turn auto-renew off, upgrade,
    /// get a refund of an earlier period and a consumption request about another, then a refund of the current one.
    static let everything: Lifecycle = {
        let id = "1000"
        func tx(
            _ n: Int, product: String = "basic.monthly", from: Int64, to: Int64, signed: Int64, revoked: Int64? = nil,
            upgraded: Bool = false, offer: OfferType = .unspecified
        ) -> SignedTransaction {
            S.transaction(
                "\(1000 + n)", original: id, product: product, purchased: S.at(from), expires: S.at(to),
                signed: S.at(signed), revoked: revoked.map { S.at($0) }, upgraded: upgraded, offer: offer)
        }
        func rn(
            _ signed: Int64, product: String = "basic.monthly", next: String? = nil, on: Bool = true,
            retry: Bool = false, grace: Int64? = nil
        ) -> SignedRenewalInfo {
            S.renewal(
                original: id, product: product, autoRenewProduct: next, autoRenew: on, inBillingRetry: retry,
                graceEnds: grace.map { S.at($0) }, signed: S.at(signed))
        }
        return Lifecycle(
            name: "everything", key: S.key(id),
            steps: [
                // SUBSCRIBED / INITIAL_BUY with a free trial.
                Step(
                    transaction: tx(0, from: 0, to: 7, signed: 0, offer: .introductoryOffer), renewalInfo: rn(0),
                    at: S.at(0), expected: .active),
                // DID_RENEW ×3.
                Step(
                    transaction: tx(1, from: 7, to: 37, signed: 7), renewalInfo: rn(7), at: S.at(7), expected: .active),
                Step(
                    transaction: tx(2, from: 37, to: 67, signed: 37), renewalInfo: rn(37), at: S.at(37),
                    expected: .active),
                Step(
                    transaction: tx(3, from: 67, to: 97, signed: 67), renewalInfo: rn(67), at: S.at(67),
                    expected: .active),
                // DID_FAIL_TO_RENEW / GRACE_PERIOD: the last period re-signed, renewal info in retry with grace.
                Step(
                    transaction: tx(3, from: 67, to: 97, signed: 97), renewalInfo: rn(97, retry: true, grace: 113),
                    at: S.at(97), expected: .billingGracePeriod),
                // DID_RENEW / BILLING_RECOVERY.
                Step(
                    transaction: tx(4, from: 100, to: 130, signed: 100), renewalInfo: rn(100), at: S.at(100),
                    expected: .active),
                // DID_CHANGE_RENEWAL_STATUS / AUTO_RENEW_DISABLED.
                Step(
                    transaction: tx(4, from: 100, to: 130, signed: 110), renewalInfo: rn(110, on: false),
                    at: S.at(110), expected: .active),
                // DID_CHANGE_RENEWAL_PREF / UPGRADE: the new product now; the old transaction marked upgraded
                // (read from Apple's history).
                Step(
                    transaction: tx(5, product: "premium.monthly", from: 115, to: 145, signed: 115),
                    renewalInfo: rn(115, product: "premium.monthly"), at: S.at(115), expected: .active),
                Step(
                    transaction: tx(4, from: 100, to: 130, signed: 116, upgraded: true), renewalInfo: nil,
                    at: S.at(116), expected: .active),
                // REFUND of an earlier period: an older transaction, newer signedDate.
                Step(
                    transaction: tx(2, from: 37, to: 67, signed: 120, revoked: 120), renewalInfo: nil, at: S.at(120),
                    expected: .active),
                // CONSUMPTION_REQUEST about another earlier period.
                Step(
                    transaction: tx(1, from: 7, to: 37, signed: 125), renewalInfo: nil, at: S.at(125), expected: .active
                ),
                // REFUND of the current period.
                Step(
                    transaction: tx(5, product: "premium.monthly", from: 115, to: 145, signed: 130, revoked: 130),
                    renewalInfo: rn(130, product: "premium.monthly", on: false), at: S.at(130), expected: .revoked),
            ])
    }()

    /// Fail to renew without grace, stay in billing retry, then EXPIRED / BILLING_RETRY; resubscribe later.
    static let billingRetryThenExpired: Lifecycle = {
        let id = "2000"
        func tx(_ n: Int, from: Int64, to: Int64, signed: Int64) -> SignedTransaction {
            S.transaction("\(2000 + n)", original: id, purchased: S.at(from), expires: S.at(to), signed: S.at(signed))
        }
        return Lifecycle(
            name: "billing retry then expired", key: S.key(id),
            steps: [
                Step(
                    transaction: tx(0, from: 0, to: 30, signed: 0),
                    renewalInfo: S.renewal(original: id, signed: S.at(0)),
                    at: S.at(0), expected: .active),
                Step(
                    transaction: tx(0, from: 0, to: 30, signed: 30),
                    renewalInfo: S.renewal(original: id, inBillingRetry: true, signed: S.at(30)), at: S.at(30),
                    expected: .billingRetry),
                Step(
                    transaction: tx(0, from: 0, to: 30, signed: 90),
                    renewalInfo: S.renewal(original: id, autoRenew: false, intent: .billingError, signed: S.at(90)),
                    at: S.at(90), expected: .expired),
                // SUBSCRIBED / RESUBSCRIBE.
                Step(
                    transaction: tx(1, from: 200, to: 230, signed: 200),
                    renewalInfo: S.renewal(original: id, signed: S.at(200)), at: S.at(200), expected: .active),
            ])
    }()

    /// A family member's shared subscription: shared, renewed, then REVOKE.
    static let familyShared: Lifecycle = {
        let id = "3000"
        func tx(_ n: Int, from: Int64, to: Int64, signed: Int64, revoked: Int64? = nil) -> SignedTransaction {
            S.transaction(
                "\(3000 + n)", original: id, purchased: S.at(from), expires: S.at(to), signed: S.at(signed),
                revoked: revoked.map { S.at($0) }, ownership: .familyShared)
        }
        return Lifecycle(
            name: "family shared", key: S.key(id),
            steps: [
                Step(
                    transaction: tx(0, from: 0, to: 30, signed: 1),
                    renewalInfo: S.renewal(original: id, signed: S.at(1)),
                    at: S.at(1), expected: .active),
                Step(
                    transaction: tx(1, from: 30, to: 60, signed: 30),
                    renewalInfo: S.renewal(original: id, signed: S.at(30)),
                    at: S.at(30), expected: .active),
                Step(
                    transaction: tx(1, from: 30, to: 60, signed: 40, revoked: 40), renewalInfo: nil, at: S.at(40),
                    expected: .revoked),
            ])
    }()

    static let all = [everything, billingRetryThenExpired, familyShared]
}
