import NotificationStore
import ProtoCodec
import SubscriptionState
import Testing

/// The events a store keeps beside the state (an outbox in the state's own commits), against every store.
@Suite struct SubscriptionEventStoreTests {
    typealias S = StateSnapshots

    static let context = SubscriptionEventContext(
        app: "reader", policy: SubscriptionPolicy(entitlements: ["pro": ["reader.monthly"]]), cause: "uuid-1")

    @Test(arguments: StoreKind.allCases)
    func eventsAreKeptWithTheChangeThatMadeThemAndReadBackInOrder(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let seen = store.eventSignal.generation
        let first = try await store.apply(
            S.change(
                S.transaction("t1", original: "o1", signed: 1), S.renewal(original: "o1", signed: 1), now: 1,
                events: Self.context))
        #expect(first.events.map(\.type) == [.initialPurchase, .entitlementGranted])
        #expect(store.eventSignal.generation != seen)
        // The same snapshot again: no change, no event.
        let again = try await store.apply(
            S.change(S.transaction("t1", original: "o1", signed: 1), now: 2, events: Self.context))
        #expect(!again.changed)
        #expect(again.events.isEmpty)
        // A change without an event context (a rebuild's replay) makes none and leaves the cursor.
        let quiet = try await store.apply(
            S.change(nil, S.renewal(original: "o1", autoRenew: false, signed: 3), key: S.key("o1"), now: 3))
        #expect(quiet.changed)
        #expect(quiet.events.isEmpty)
        let loud = try await store.apply(
            S.change(
                S.transaction("t2", original: "o1", purchased: 30 * S.day, expires: 60 * S.day, signed: 4),
                now: 4, events: Self.context))
        #expect(loud.events.map(\.type) == [.renewal])
        let all = try await store.events(after: 0, bundleId: nil, limit: 100)
        #expect(all.map(\.event.sequence) == [1, 2, 3])
        #expect(all.map(\.position) == all.map(\.position).sorted())
        #expect(all.map(\.event) == first.events + loud.events)
        #expect(try await store.lastEventPosition() == all.last?.position)
        #expect(
            try await store.events(after: all[0].position, bundleId: nil, limit: 1).map(\.position) == [all[1].position]
        )
        #expect(try await store.events(after: 0, bundleId: "com.other", limit: 100).isEmpty)
        #expect(try await store.events(after: 0, bundleId: S.bundleId, limit: 100).count == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func timeTransitionsAreDueOnceAndRebuildKeepsTheEvents(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let context = Self.context
        _ = try await store.apply(
            S.change(
                S.transaction("t1", original: "o1", signed: 1), S.renewal(original: "o1", autoRenew: false, signed: 1),
                now: 1, events: context))
        let expiry = S.t0 + 30 * S.day
        #expect(try await store.nextTransition(bundleIds: [S.bundleId]) == expiry)
        #expect(try await store.nextTransition(bundleIds: ["com.other"]) == nil)
        #expect(try await store.dueTransitions(through: expiry - 1, bundleIds: [S.bundleId], limit: 10).isEmpty)
        #expect(try await store.dueTransitions(through: expiry, bundleIds: ["com.other"], limit: 10).isEmpty)
        #expect(try await store.dueTransitions(through: expiry, bundleIds: [S.bundleId], limit: 10) == [S.key("o1")])
        var timed = context
        timed.cause = "time"
        let made = try await store.advance(S.key("o1"), context: timed, nowMillis: expiry)
        #expect(made.map(\.type) == [.expiration, .entitlementRevoked])
        #expect(made.allSatisfy { $0.cause == "time" })
        #expect(try await store.dueTransitions(through: expiry + S.day, bundleIds: [S.bundleId], limit: 10).isEmpty)
        #expect(try await store.advance(S.key("o1"), context: timed, nowMillis: expiry + 1).isEmpty)
        // A rebuild deletes the state, never the events nor what they told consumers.
        try await store.removeAll()
        #expect(try await store.record(S.key("o1")) == nil)
        #expect(try await store.events(after: 0, bundleId: nil, limit: 100).count == 4)
        _ = try await store.apply(
            S.change(
                S.transaction("t1", original: "o1", signed: 1), S.renewal(original: "o1", autoRenew: false, signed: 1),
                now: 1))
        #expect(try await store.recordKeys(after: nil, limit: 10) == [S.key("o1")])
        #expect(try await store.recordKeys(after: S.key("o1"), limit: 10).isEmpty)
        var rebuilt = context
        rebuilt.cause = "rebuild"
        #expect(try await store.advance(S.key("o1"), context: rebuilt, nowMillis: expiry + 2).isEmpty)
        // Pruning by age.
        #expect(try await store.pruneEvents(occurredBefore: S.t0 + 2) == 2)
        #expect(try await store.events(after: 0, bundleId: nil, limit: 100).map(\.event.sequence) == [3, 4])
    }

    /// A cursor whose record a rebuild did not recreate is not due for ever: advancing it forgets its transition.
    @Test(arguments: StoreKind.allCases)
    func aCursorWithoutARecordStopsBeingDue(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        _ = try await store.apply(
            S.change(
                S.transaction("t1", original: "o1", signed: 1), S.renewal(original: "o1", autoRenew: false, signed: 1),
                now: 1, events: Self.context))
        try await store.removeAll()
        let expiry = S.t0 + 30 * S.day
        #expect(try await store.dueTransitions(through: expiry, bundleIds: [S.bundleId], limit: 10) == [S.key("o1")])
        var timed = Self.context
        timed.cause = "time"
        #expect(try await store.advance(S.key("o1"), context: timed, nowMillis: expiry).isEmpty)
        #expect(try await store.dueTransitions(through: expiry + S.day, bundleIds: [S.bundleId], limit: 10).isEmpty)
        #expect(try await store.nextTransition(bundleIds: [S.bundleId]) == nil)
    }

    /// Pruning remembers the newest position it deleted, so a stream resuming before it is refused instead of
    /// silently skipping the deleted events.
    @Test(arguments: StoreKind.allCases)
    func pruningRemembersHowFarItDeleted(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        #expect(try await store.eventsPrunedThrough() == 0)
        _ = try await store.apply(
            S.change(S.transaction("t1", original: "o1", signed: 1), now: 1, events: Self.context))
        _ = try await store.apply(
            S.change(S.transaction("t2", original: "o2", signed: 1), now: 5, events: Self.context))
        let all = try await store.events(after: 0, bundleId: nil, limit: 10)
        #expect(try await store.pruneEvents(occurredBefore: S.t0 + 2) == 2)
        #expect(try await store.eventsPrunedThrough() == all[1].position)
        #expect(try await store.pruneEvents(occurredBefore: S.t0 + 2) == 0)
        #expect(try await store.eventsPrunedThrough() == all[1].position)
    }

    @Test(arguments: StoreKind.allCases)
    func aPurchaseHasItsOwnSequence(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let lifetime = SubscriptionEventContext(
            app: "reader", policy: SubscriptionPolicy(entitlements: ["all": ["reader.lifetime"]]), cause: "app-posted")
        let bought = S.transaction(
            "p1", original: "p1", product: "reader.lifetime", expires: nil, signed: 1, type: .nonConsumable)
        let applied = try await store.apply(S.change(bought, now: 1, events: lifetime))
        #expect(applied.events.map(\.type) == [.nonConsumablePurchase, .entitlementGranted])
        #expect(applied.events.map(\.sequence) == [1, 2])
        #expect(applied.events[0].purchase?.transactionId == "p1")
    }

    @Test func eventsAndCursorsSurviveARestart() async throws {
        let file = try StoreFile()
        do {
            let store = try SQLiteNotificationStore(path: file.path).subscriptions
            _ = try await store.apply(
                S.change(S.transaction("t1", original: "o1", signed: 1), now: 1, events: Self.context))
        }
        let store = try SQLiteNotificationStore(path: file.path).subscriptions
        #expect(try await store.events(after: 0, bundleId: nil, limit: 10).count == 2)
        let next = try await store.apply(
            S.change(
                S.transaction("t2", original: "o1", purchased: 30 * S.day, expires: 60 * S.day, signed: 2), now: 2,
                events: Self.context))
        #expect(next.events.map(\.sequence) == [3])
    }
}
