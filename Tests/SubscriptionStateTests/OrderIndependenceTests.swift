import GatewayFoundation
import ProtoCodec
import SubscriptionState
import Testing

/// The property the reducer exists for: a lifecycle's snapshots delivered in any order, each any number of times,
/// give the same ledger and the same derived state at every instant as delivery in order.
@Suite struct OrderIndependenceTests {
    typealias S = Snapshots
    static let policies = [
        SubscriptionPolicy(refundPolicy: .immediate, entitlements: ["pro": ["basic.monthly", "premium.monthly"]]),
        SubscriptionPolicy(refundPolicy: .untilExpiry, entitlements: ["extras": ["premium.monthly"]]),
    ]

    /// The record after the first `count` steps (all by default), delivered in order.
    static func inOrder(_ lifecycle: Lifecycle, steps count: Int? = nil) throws -> SubscriptionRecord {
        var record = SubscriptionRecord(key: lifecycle.key)
        for step in lifecycle.steps.prefix(count ?? lifecycle.steps.count) {
            try record.apply(
                transaction: step.transaction, renewalInfo: step.renewalInfo, source: .notification, nowMillis: step.at)
        }
        return record
    }

    /// In order, Apple's status after every step is the one the lifecycle expects: the lifecycles are realistic.
    @Test(arguments: Lifecycle.all)
    func inOrderDeliveryGivesApplesStatusAfterEveryStep(_ lifecycle: Lifecycle) throws {
        var record = SubscriptionRecord(key: lifecycle.key)
        for (index, step) in lifecycle.steps.enumerated() {
            let changed = try record.apply(
                transaction: step.transaction, renewalInfo: step.renewalInfo, source: .notification, nowMillis: step.at)
            #expect(changed, "step \(index) of \(lifecycle.name) is news")
            #expect(
                record.state(at: step.at, policy: .defaults).status == step.expected,
                "step \(index) of \(lifecycle.name)")
        }
        #expect(record.version == UInt64(lifecycle.steps.count))
    }

    @Test func theFullLifecycleEndsWhereAppleWould() throws {
        // After the upgrade (step 8 of 12): the premium transaction is current, access continues.
        let upgraded = try Self.inOrder(.everything, steps: 9).state(at: S.at(117), policy: Self.policies[0])
        #expect(upgraded.productId == "premium.monthly")
        #expect(upgraded.transaction?.payload.transactionId == "1005")
        #expect(upgraded.entitled)
        #expect(upgraded.autoRenew)
        let record = try Self.inOrder(.everything)
        let end = record.state(at: S.at(131), policy: Self.policies[0])
        #expect(end.status == .revoked)
        #expect(!end.entitled)
        #expect(record.transactions.count == 6)
        #expect(record.transactions["1002"]?.payload.revocationDateMillis == S.at(120))
        #expect(record.state(at: S.at(131), policy: Self.policies[1]).entitlements == ["extras"], "until expiry")
    }

    /// 100 seeded orders per lifecycle, each delivery repeated up to 3 more times (a copy sometimes split into
    /// its transaction and its renewal info, as Apple's API and the app deliver them): the same ledger and the same
    /// state (all but version, update time and source) at every probe instant, under both refund policies.
    @Test(arguments: Lifecycle.all)
    func anyOrderWithDuplicatesGivesTheSameState(_ lifecycle: Lifecycle) throws {
        let reference = try Self.inOrder(lifecycle)
        let probes = lifecycle.probes
        let snapshots = lifecycle.steps.reduce(0) {
            $0 + ($1.transaction == nil ? 0 : 1) + ($1.renewalInfo == nil ? 0 : 1)
        }
        for seed in UInt64(1)...100 {
            var generator = SplitMix64(seed: seed &* 0x2545_F491_4F6C_DD1D ^ UInt64(lifecycle.steps.count))
            var deliveries: [(SignedTransaction?, SignedRenewalInfo?)] = []
            for step in lifecycle.steps {
                for _ in 0...Int.random(in: 0...3, using: &generator) {
                    if Int.random(in: 0..<3, using: &generator) == 0 {
                        deliveries += [(step.transaction, nil), (nil, step.renewalInfo)]
                    } else {
                        deliveries.append((step.transaction, step.renewalInfo))
                    }
                }
            }
            deliveries.shuffle(using: &generator)
            var record = SubscriptionRecord(key: lifecycle.key)
            for (index, (transaction, renewalInfo)) in deliveries.enumerated() {
                try record.apply(
                    transaction: transaction, renewalInfo: renewalInfo,
                    source: index % 2 == 0 ? .notification : .appleRead, nowMillis: S.at(500) + Int64(index))
            }
            #expect(record.transactions == reference.transactions, "\(lifecycle.name), seed \(seed)")
            #expect(record.renewalInfo == reference.renewalInfo, "\(lifecycle.name), seed \(seed)")
            #expect(record.version <= UInt64(snapshots), "a duplicate or older snapshot is never a change")
            for policy in Self.policies {
                for instant in probes {
                    let state = record.state(at: instant, policy: policy)
                    guard state == reference.state(at: instant, policy: policy) else {
                        Issue.record("\(lifecycle.name), seed \(seed): state at \(instant) differs")
                        return
                    }
                    #expect(
                        record.nextTransitionMillis(at: instant, policy: policy)
                            == reference.nextTransitionMillis(at: instant, policy: policy))
                }
            }
        }
    }
}

extension Lifecycle: CustomTestStringConvertible {
    var testDescription: String { name }
}
