import ProtoCodec
import Simulator
import SubscriptionState

/// An entitlement as a plain value, to compare the reducer's with the one the simulator's facts imply.
struct ExpectedEntitlement: Equatable, CustomStringConvertible {
    var name: String
    var active: Bool
    var expiresDateMillis: Int64?
    var originalTransactionIds: [String]
    var productIds: [String]

    init(_ entitlement: EntitlementGrant) {
        name = entitlement.name
        active = entitlement.active
        expiresDateMillis = entitlement.expiresDateMillis
        originalTransactionIds = entitlement.originalTransactionIds
        productIds = entitlement.productIds
    }

    init(name: String, sources: [Source]) {
        let granting = sources.filter(\.grants)
        let counted = granting.isEmpty ? sources : granting
        self.name = name
        active = !granting.isEmpty
        if granting.isEmpty {
            expiresDateMillis = sources.compactMap(\.expiresDate).max()
        } else {
            let ends = granting.map(\.accessEnd)
            expiresDateMillis = ends.contains(nil) ? nil : ends.compactMap { $0 }.max()
        }
        originalTransactionIds = Array(Set(counted.map(\.originalTransactionId))).sorted()
        productIds = Array(Set(counted.map(\.productId))).sorted()
    }

    var description: String {
        "\(name) \(active ? "active" : "inactive") until \(expiresDateMillis.map(String.init) ?? "-") "
            + "from \(originalTransactionIds) \(productIds)"
    }

    /// A subscription or one-time purchase as the simulator holds it, at one instant.
    struct Source {
        var originalTransactionId: String
        var productId: String
        var grants: Bool
        var accessEnd: Int64?
        var expiresDate: Int64?
    }
}

extension LifecycleState {
    /// The customers' entitlements at `now` under `policy`, from the simulator's own records and purchases: the
    /// purchaser's (their subscription and one-time purchases) first, then each family member's, by original
    /// transaction id. A subscription grants while Apple's status is 1 or 4 (under `untilExpiry` also while
    /// revoked before its expiry), a non-consumable or non-renewing purchase until it is revoked.
    func expectedEntitlements(at now: Int64, policy: SubscriptionPolicy) -> [[ExpectedEntitlement]] {
        var purchaser: [(names: [String], source: ExpectedEntitlement.Source)] = []
        if let subscription { purchaser.append(Self.source(subscription, at: now, policy: policy)) }
        for purchase in purchases where purchase.kind == .nonConsumable || purchase.kind == .nonRenewing {
            purchaser.append(
                (
                    policy.entitlementNames(unlockedBy: purchase.productId),
                    ExpectedEntitlement.Source(
                        originalTransactionId: purchase.originalTransactionId, productId: purchase.productId,
                        grants: purchase.revocationDate == nil, accessEnd: nil, expiresDate: nil)
                ))
        }
        let members = familyMembers.sorted { $0.originalTransactionId < $1.originalTransactionId }
        return [Self.entitlements(purchaser)]
            + members.map { Self.entitlements([Self.source($0, at: now, policy: policy)]) }
    }

    private static func source(_ record: Simulator.SubscriptionRecord, at now: Int64, policy: SubscriptionPolicy)
        -> (names: [String], source: ExpectedEntitlement.Source)
    {
        let status = record.status(at: now)
        let expires = record.current.expiresDate
        let grants =
            status == 1 || status == 4
            || (status == 5 && policy.refundPolicy == .untilExpiry && expires.map { now < $0 } == true)
        return (
            policy.entitlementNames(unlockedBy: record.current.productId),
            ExpectedEntitlement.Source(
                originalTransactionId: record.originalTransactionId, productId: record.current.productId,
                grants: grants, accessEnd: status == 4 ? record.renewal.gracePeriodExpiresDate : expires,
                expiresDate: expires)
        )
    }

    private static func entitlements(_ sources: [(names: [String], source: ExpectedEntitlement.Source)])
        -> [ExpectedEntitlement]
    {
        var byName: [String: [ExpectedEntitlement.Source]] = [:]
        for (names, source) in sources {
            for name in names { byName[name, default: []].append(source) }
        }
        return byName.map { ExpectedEntitlement(name: $0.key, sources: $0.value) }.sorted { $0.name < $1.name }
    }
}
