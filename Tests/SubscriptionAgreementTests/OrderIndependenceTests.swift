import AppStoreDomain
import GatewayFoundation
import ProtoCodec
import Simulator
import SubscriptionState
import Testing

/// Order independence: every simulator lifecycle's notifications (and, apart, its notifications with Apple's
/// answers) delivered in 100 seeded random orders, each one up to 3 more times, end in the same ledger and the
/// same derived state as delivery in order, at every step's instant and long after the last step.
@Suite struct OrderIndependenceTests {
    /// What a ledger says at the probe instants, all but the bookkeeping: per record and policy its state and next
    /// timer, per customer and policy its entitlements.
    struct Reading: Equatable {
        var states: [SubscriptionKey: [DerivedSubscription]]
        var timers: [SubscriptionKey: [Int64?]]
        var entitlements: [[EntitlementGrant]]

        init(_ ledger: Ledger, at instants: [Int64], policies: [SubscriptionPolicy]) {
            states = [:]
            timers = [:]
            for (key, record) in ledger.records {
                for instant in instants {
                    for policy in policies {
                        states[key, default: []].append(record.state(at: instant, policy: policy))
                        timers[key, default: []].append(record.nextTransitionMillis(at: instant, policy: policy))
                    }
                }
            }
            let customers = ledger.customers
            entitlements = instants.flatMap { instant in
                policies.flatMap { policy in customers.map { $0.entitlements(at: instant, policy: policy) } }
            }
        }
    }

    /// Where to read a lifecycle's state: every step's instant, and after the last step a day, 61 and 400 days
    /// later (past every period, grace period and billing retry).
    static func instants(_ run: DecodedRun) -> [Int64] {
        let day = LifecycleCalendar.day
        return run.steps.map(\.instant) + [1, 61, 400].map { run.lastInstant + $0 * day }
    }

    /// The lifecycle's notifications, each delivered 1 to 4 times, in 100 seeded orders: as in order.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func anyOrderWithDuplicatesEndsInTheSameState(_ name: String, _ environment: AppleEnvironment) throws {
        let run = try DecodedLifecycles.run(name, environment)
        try Self.expectOrderIndependence(run, run.steps.map(\.notifications), "notifications")
    }

    /// The same with Apple's reads among them: each step's Get All Subscription Statuses answer (the current
    /// transaction and renewal info signed at the step's instant) is one more input of the same reducer.
    @Test(arguments: DecodedLifecycles.names, AppleEnvironment.allCases)
    func anyOrderOfNotificationsAndApplesAnswersEndsInTheSameState(_ name: String, _ environment: AppleEnvironment)
        throws
    {
        let run = try DecodedLifecycles.run(name, environment)
        try Self.expectOrderIndependence(run, run.steps.map { $0.notifications + $0.answers }, "with answers")
    }

    /// `deliveries` (per step, in order) applied in order, then in 100 seeded random orders with each delivery
    /// repeated up to 3 more times: the same snapshots, no version for a duplicate, the same reading.
    static func expectOrderIndependence(_ run: DecodedRun, _ deliveries: [[Delivery]], _ label: String) throws {
        var reference = Ledger()
        for (step, sent) in zip(run.steps, deliveries) {
            for delivery in sent { try reference.deliver(delivery, source: .notification, nowMillis: step.instant) }
        }
        let instants = Self.instants(run)
        let policies = run.policies
        let expected = Reading(reference, at: instants, policies: policies)
        let snapshots = reference.snapshots
        let all = deliveries.flatMap { $0 }
        // A record's version counts its changes: never more than the distinct deliveries about it.
        var distinct: [String: Set<Delivery>] = [:]
        for delivery in all where delivery.transaction.payload.type == .autoRenewable {
            distinct[delivery.transaction.payload.originalTransactionId, default: []].insert(delivery)
        }
        // FNV-1a of the run's name and environment, so every run has orders of its own.
        let mixed = "\(run.name)/\(run.environment)/\(label)".utf8.reduce(UInt64(0xCBF2_9CE4_8422_2325)) {
            ($0 ^ UInt64($1)) &* 0x100_0000_01B3
        }
        for seed in UInt64(1)...100 {
            var generator = SplitMix64(seed: mixed ^ seed)
            var shuffled: [Delivery] = []
            for delivery in all {
                for _ in 0...Int.random(in: 0...3, using: &generator) { shuffled.append(delivery) }
            }
            shuffled.shuffle(using: &generator)
            var ledger = Ledger()
            for (index, delivery) in shuffled.enumerated() {
                try ledger.deliver(
                    delivery, source: index.isMultiple(of: 2) ? .notification : .appleRead,
                    nowMillis: run.lastInstant + Int64(index))
            }
            let at = "\(run.name) (\(run.environment)), \(label), seed \(seed)"
            guard ledger.snapshots == snapshots else {
                Issue.record("\(at): the ledger differs")
                return
            }
            for (key, record) in ledger.records {
                let bound = UInt64(distinct[key.originalTransactionId]?.count ?? 0)
                #expect(record.version <= bound, "\(at): a duplicate or older snapshot changed the record")
            }
            guard Reading(ledger, at: instants, policies: policies) == expected else {
                Issue.record("\(at): the derived state differs")
                return
            }
        }
    }
}
