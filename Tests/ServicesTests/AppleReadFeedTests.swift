import AppStoreDomain
import AppleFixtures
import Cryptography
import Foundation
import GatewayFoundation
import Metrics
import NotificationStore
import Observability
import ProtoCodec
import SignedData
import SubscriptionState
import Testing

@testable import Services

/// A memory store whose `apply` first runs `hook` (a test's gate or failure); everything else as the memory store.
final class HookedSubscriptionStore: SubscriptionStore {
    let held: any SubscriptionStore
    let hook: @Sendable () async throws(NotificationStoreFailure) -> Void

    init(
        _ held: any SubscriptionStore = MemorySubscriptionStore(),
        hook: @escaping @Sendable () async throws(NotificationStoreFailure) -> Void
    ) {
        self.held = held
        self.hook = hook
    }

    func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    {
        try await hook()
        return try await held.apply(changes, projectedThrough: position)
    }
    func apply(_ change: SubscriptionChange) async throws(NotificationStoreFailure) -> AppliedChange {
        try await hook()
        return try await held.apply(change)
    }
    func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionState.SubscriptionRecord?
    {
        try await held.record(key)
    }
    func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    {
        try await held.customer(bundleId: bundleId, environment: environment, appAccountToken: appAccountToken)
    }
    func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
        try await held.customer(key)
    }
    func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
        try await held.projectedThrough()
    }
    func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
        try await held.setProjectedThrough(position)
    }
    func removeAll() async throws(NotificationStoreFailure) { try await held.removeAll() }
    func advance(_ key: SubscriptionKey, context: SubscriptionEventContext, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> [SubscriptionEvent]
    {
        try await held.advance(key, context: context, nowMillis: nowMillis)
    }
    func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
        async throws(NotificationStoreFailure) -> [SubscriptionKey]
    {
        try await held.dueTransitions(through: nowMillis, bundleIds: bundleIds, limit: limit)
    }
    func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64? {
        try await held.nextTransition(bundleIds: bundleIds)
    }
    func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    {
        try await held.recordKeys(after: key, limit: limit)
    }
    func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure) -> [StoredPurchase] {
        try await held.purchases(after: key, limit: limit)
    }
    func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    {
        try await held.events(after: position, bundleId: bundleId, limit: limit)
    }
    func lastEventPosition() async throws(NotificationStoreFailure) -> Int64 { try await held.lastEventPosition() }
    func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int {
        try await held.pruneEvents(occurredBefore: millis)
    }
    func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64 {
        try await held.eventsPrunedThrough()
    }
    var eventSignal: LiveSignal { held.eventSignal }
}

/// The value of one series of `registry` (0 when absent).
func metricValue(_ registry: MetricsRegistry, _ series: String) -> Double {
    for line in registry.render().split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.split(separator: " ").last ?? "") ?? 0
    }
    return 0
}

/// The feed on its own: pairing, the bound and a failing store, with a memory store and a manual clock.
@Suite struct AppleReadFeedTests {
    typealias Fixture = SubscriptionStatesTests
    let t0 = SubscriptionStatesTests.t0
    let day = SubscriptionStatesTests.day

    func states(store: any SubscriptionStore, registry: MetricsRegistry) throws -> SubscriptionStates {
        let pki = try AppStoreTestPKI(referenceTime: Date())
        return SubscriptionStates(
            store: store, apps: AppDirectory([SubscriptionStatesTests().app]), policies: [:],
            verifier: try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate])),
            clock: ManualClock(wall: WallTime(millisecondsSince1970: t0)),
            metrics: SubscriptionStateMetrics(registry: registry)
        ) { _, _ throws(GatewayError) in
            throw .cancelled
        }
    }

    func active(_ original: String) -> SignedTransaction {
        Fixture.transaction(original, purchased: t0 - day, expires: t0 + 29 * day, signed: t0 - day)
    }

    /// A renewal info goes with the first transaction of its subscription; one with no transaction is alone.
    @Test func renewalInfosArePairedWithTheFirstTransactionOfTheirSubscription() {
        let older = Fixture.transaction("1", purchased: t0 - 40 * day, expires: t0 - 10 * day, signed: t0 - 40 * day)
        var newer = active("1")
        newer.payload.transactionId = "2"
        let snapshots = VerifiedSnapshots(
            transactions: [older, newer, active("3")],
            renewals: [Fixture.renewal("1", signed: t0), Fixture.renewal("9", signed: t0)])
        let pairs = snapshots.pairs()
        #expect(pairs.count == 4)
        #expect(pairs[0].transaction?.jws == older.jws && pairs[0].renewal?.payload.originalTransactionId == "1")
        #expect(pairs[1].transaction?.payload.transactionId == "2" && pairs[1].renewal == nil)
        #expect(pairs[2].transaction?.payload.originalTransactionId == "3" && pairs[2].renewal == nil)
        #expect(pairs[3].transaction == nil && pairs[3].renewal?.payload.originalTransactionId == "9")
        #expect(snapshots.prefix(4).count == 4 && snapshots.prefix(4).renewals.count == 1)
        #expect(snapshots.prefix(2).renewals.isEmpty && snapshots.prefix(-1).isEmpty)
    }

    /// Applied as an Apple read, with its events; another app's snapshot is refused and counted.
    @Test func snapshotsAreAppliedAsAppleReadsAndAnotherAppsAreRefused() async throws {
        let registry = MetricsRegistry()
        let store = MemorySubscriptionStore()
        let states = try states(store: store, registry: registry)
        let feed = AppleReadFeed(states: states)
        var foreign = active("5")
        foreign.payload.bundleId = "com.example.other"
        feed.observe(
            VerifiedSnapshots(transactions: [active("4"), foreign], renewals: [Fixture.renewal("4", signed: t0)]),
            app: states.apps.apps[0])
        await feed.settled()
        let key = SubscriptionKey(
            bundleId: Fixture.bundle, environment: .sandbox, originalTransactionId: "4")
        let record = try #require(try await store.record(key))
        #expect(record.source == .appleRead && record.renewalInfo != nil)
        #expect(try await store.record(SubscriptionKey(of: foreign.payload)) == nil)
        #expect(metricValue(registry, #"appstore_gateway_state_rejected_total{reason="other_app"}"#) == 1)
        #expect(
            metricValue(registry, #"appstore_gateway_state_changes_total{app="example",source="apple_read"}"#) == 1)
        #expect(
            metricValue(registry, #"appstore_gateway_state_events_total{app="example",type="INITIAL_PURCHASE"}"#) == 1)
        let events = try await store.events(after: 0, bundleId: Fixture.bundle, limit: 10)
        #expect(!events.isEmpty && events.allSatisfy { $0.event.cause == SubscriptionEventContext.appleRead })
    }

    /// Past `maxPending` snapshots waiting (or being applied), the rest is dropped and counted; what was taken is
    /// applied once the store answers.
    @Test func beyondTheBoundSnapshotsAreDroppedAndCounted() async throws {
        let registry = MetricsRegistry()
        let gate = AsyncStream<Void>.makeStream()
        let store = HookedSubscriptionStore { () async throws(NotificationStoreFailure) in
            for await _ in gate.stream { break }
        }
        let states = try states(store: store, registry: registry)
        let feed = AppleReadFeed(states: states, maxPending: 3)
        let app = states.apps.apps[0]
        feed.observe(VerifiedSnapshots(transactions: [active("11"), active("12")]), app: app)
        feed.observe(VerifiedSnapshots(transactions: [active("13"), active("14")]), app: app)
        feed.observe(VerifiedSnapshots(renewals: [Fixture.renewal("15", signed: t0)]), app: app)
        let backlog = #"appstore_gateway_state_pass_through_dropped_total{reason="backlog"}"#
        #expect(metricValue(registry, backlog) == 2)
        gate.continuation.finish()
        await feed.settled()
        for (original, kept) in [("11", true), ("12", true), ("13", true), ("14", false)] {
            let key = SubscriptionKey(bundleId: Fixture.bundle, environment: .sandbox, originalTransactionId: original)
            #expect((try await store.record(key) != nil) == kept, "\(original)")
        }
        // Room again once applied.
        feed.observe(VerifiedSnapshots(transactions: [active("14")]), app: app)
        await feed.settled()
        let key = SubscriptionKey(bundleId: Fixture.bundle, environment: .sandbox, originalTransactionId: "14")
        #expect(try await store.record(key) != nil)
        #expect(metricValue(registry, backlog) == 2)
    }

    /// A store that fails loses the snapshots of that commit, counted; the feed goes on with the next ones.
    @Test func aFailingStoreIsCountedAndTheFeedGoesOn() async throws {
        let registry = MetricsRegistry()
        let failing = Lock(true)
        let store = HookedSubscriptionStore { () throws(NotificationStoreFailure) in
            if failing.withLock({ $0 }) { throw NotificationStoreFailure("disk I/O error") }
        }
        let states = try states(store: store, registry: registry)
        let feed = AppleReadFeed(states: states)
        let app = states.apps.apps[0]
        feed.observe(
            VerifiedSnapshots(transactions: [active("21")], renewals: [Fixture.renewal("21", signed: t0)]), app: app)
        await feed.settled()
        #expect(metricValue(registry, #"appstore_gateway_state_pass_through_dropped_total{reason="store"}"#) == 2)
        failing.withLock { $0 = false }
        feed.observe(VerifiedSnapshots(transactions: [active("22")]), app: app)
        await feed.settled()
        let key = SubscriptionKey(bundleId: Fixture.bundle, environment: .sandbox, originalTransactionId: "22")
        #expect(try await store.record(key)?.source == .appleRead)
    }
}
