import AppStoreDomain
import GRPC
import GatewayFoundation
import Metrics
import NotificationStore
import ProtoCodec
import SubscriptionState
import Testing

@testable import Services

/// GetSubscription's record cache: a kept record is used only while the store says it still has the stamp it was
/// read at, so a change any replica commits is in the next answer; bounded; the export's walk does not fill it.
@Suite struct RecordCacheTests {
    typealias T = SubscriptionStatesTests
    let harness = SubscriptionStatesTests()

    private func key(_ original: String) -> SubscriptionKey {
        SubscriptionKey(bundleId: T.bundle, environment: .sandbox, originalTransactionId: original)
    }

    @Test func aKeptRecordIsUsedOnlyWhileTheStoreSaysItIsUnchanged() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "unused") }
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0))
        let registry = MetricsRegistry()
        let states = try harness.states(
            apple, clock: clock, metrics: SubscriptionStateMetrics(registry: registry))
        _ = try await states.apply(
            transaction: T.transaction("6001", purchased: T.t0, expires: T.t0 + 30 * T.day, signed: T.t0),
            renewal: T.renewal("6001", signed: T.t0), source: .notification, app: harness.app, cause: "n-1")
        let first = try #require(try await states.storedRecord(key("6001")))
        #expect(states.records.count == 1)
        #expect(try await states.storedRecord(key("6001")) == first)

        // Another replica renews it in the shared store: the next answer has the renewal.
        clock.advance(by: .seconds(1))
        var renewal = T.transaction(
            "6001", purchased: T.t0 + 30 * T.day, expires: T.t0 + 60 * T.day, signed: T.t0 + 30 * T.day)
        renewal.payload.transactionId = "6002-r"
        renewal.jws += "-r"
        _ = try await states.store.apply(
            try SubscriptionChange(
                key: key("6001"), transaction: renewal, renewalInfo: nil, source: .notification,
                nowMillis: states.nowMillis, events: nil))
        let renewed = try #require(try await states.storedRecord(key("6001")))
        #expect(renewed.version == first.version + 1)
        #expect(renewed.currentTransaction?.payload.transactionId == "6002-r")
        let answer = try await states.subscription(
            app: harness.app, originalTransactionId: "6001", environment: .sandbox, remaining: nil)
        #expect(answer.version == renewed.version)
        #expect(answer.transaction?.transactionId == "6002-r")

        #expect(Self.served(registry) == ["answer": 0, "record": 1, "read": 0])

        // The state removed (a rebuild): nothing is answered from the cache, and it forgets the record.
        try await states.store.removeAll()
        #expect(try await states.storedRecord(key("6001")) == nil)
        #expect(states.records.count == 0)
        #expect(apple.calls.withLock { $0 } == 0)
    }

    /// `appstore_gateway_state_record_cache_total` by outcome.
    static func served(_ registry: MetricsRegistry) -> [String: Double] {
        let family = registry.counter("appstore_gateway_state_record_cache_total", help: "", labelNames: ["outcome"])
        return Dictionary(uniqueKeysWithValues: ["answer", "record", "read"].map { ($0, family.labels($0).current) })
    }

    private func framed(_ states: SubscriptionStates, _ original: String) async throws -> FramedMessage {
        try await states.framedSubscription(
            app: harness.app, originalTransactionId: original, environment: .sandbox, remaining: nil)
    }

    /// GetSubscription keeps its encoded answer in place of the record and sends it again, byte for byte what a
    /// fresh answer would be, while the record is unchanged and time has not moved its state; a change by another
    /// replica, the end of a grace period, and a clock set back before the answer was made each make a new one.
    @Test func anAnswerIsKeptAndSentAgainOnlyWhileItHolds() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "unused") }
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0 + T.day / 2))
        let registry = MetricsRegistry()
        let states = try harness.states(
            apple, clock: clock, metrics: SubscriptionStateMetrics(registry: registry))
        // In billing retry with a grace period: the period ended at t0 + 1 day, the grace ends at t0 + 3 days.
        var renewal = T.renewal("6201", signed: T.t0 + T.day)
        renewal.payload.isInBillingRetryPeriod = true
        renewal.payload.gracePeriodExpiresDateMillis = T.t0 + 3 * T.day
        _ = try await states.apply(
            transaction: T.transaction("6201", purchased: T.t0 - 29 * T.day, expires: T.t0 + T.day, signed: T.t0),
            renewal: renewal, source: .notification, app: harness.app, cause: "n-1")

        let first = try await framed(states, "6201")
        #expect(try SubscriptionStates.sent(first).status == .active)
        let entry = try #require(states.records.entry(key("6201")))
        #expect(entry.record == nil && entry.answer?.framed == first)
        #expect(entry.answer?.untilMillis == T.t0 + T.day, "the state changes when the period ends")
        // What a fresh answer says, byte for byte.
        let stored = try #require(try await states.store.currentRecord(key("6201")))
        let fresh = SubscriptionStates.framed(
            Subscription(
                stored, app: harness.app.name,
                state: stored.state(at: states.nowMillis, policy: states.policy(of: harness.app)),
                stale: false))
        #expect(fresh == first)
        // The kept answer is what is sent while it holds: one put in its place (same stamp and span) comes back.
        var marked = Subscription()
        marked.productId = "the kept answer"
        let kept = try #require(entry.answer)
        states.records.keep(
            answer: RecordCache.KeptAnswer(
                app: kept.app, fromMillis: kept.fromMillis, untilMillis: kept.untilMillis,
                framed: SubscriptionStates.framed(marked)),
            stamp: entry.stamp, for: key("6201"))
        clock.advance(by: .seconds(3_600))
        #expect(try SubscriptionStates.sent(try await framed(states, "6201")).productId == "the kept answer")
        #expect(
            try await states.subscription(
                app: harness.app, originalTransactionId: "6201", environment: .sandbox, remaining: nil
            ).productId == "the kept answer")

        // The period ends: in grace now, a new answer (kept until the grace ends).
        clock.advance(by: .milliseconds(T.day))
        let grace = try await framed(states, "6201")
        #expect(try SubscriptionStates.sent(grace).status == .billingGracePeriod)
        #expect(states.records.entry(key("6201"))?.answer?.untilMillis == T.t0 + 3 * T.day)
        // The grace period ends: billing retry, not the kept grace.
        clock.advance(by: .milliseconds(2 * T.day))
        let retry = try await framed(states, "6201")
        #expect(try SubscriptionStates.sent(retry).status == .billingRetry)
        #expect(try SubscriptionStates.sent(retry).entitled == false)
        // A clock set back before that answer was made: derived again, not the kept retry.
        clock.setWall(WallTime(millisecondsSince1970: T.t0 + 2 * T.day))
        #expect(try SubscriptionStates.sent(try await framed(states, "6201")).status == .billingGracePeriod)

        // Another replica changes it in the shared store: the next answer has the change.
        var recovered = T.transaction(
            "6201", purchased: T.t0 + 2 * T.day, expires: T.t0 + 32 * T.day, signed: T.t0 + 2 * T.day)
        recovered.payload.transactionId = "6202-r"
        recovered.jws += "-r"
        let version = try SubscriptionStates.sent(try await framed(states, "6201")).version
        _ = try await states.store.apply(
            try SubscriptionChange(
                key: key("6201"), transaction: recovered, renewalInfo: nil, source: .notification,
                nowMillis: states.nowMillis, events: nil))
        let changed = try SubscriptionStates.sent(try await framed(states, "6201"))
        #expect(changed.version == version + 1)
        #expect(changed.transaction?.transactionId == "6202-r" && changed.status == .active)
        #expect(apple.calls.withLock { $0 } == 0)
        // Kept answers sent: the marked one twice and the grace answer after the clock went back; read: the first
        // answer, the grace period, billing retry, the clock set back, the change.
        #expect(Self.served(registry) == ["answer": 3, "record": 0, "read": 5])
    }

    /// An answer that needs Apple's confirmation is not kept: past the expiry with auto-renew on and Apple
    /// unreachable, each read asks again and answers `stale`.
    @Test func anAnswerThatNeededAppleIsNotKept() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "Apple is slow") }
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0 + 2 * T.day))
        let states = try harness.states(apple, clock: clock)
        _ = try await states.apply(
            transaction: T.transaction("6301", purchased: T.t0 - 29 * T.day, expires: T.t0 + T.day, signed: T.t0),
            renewal: T.renewal("6301", signed: T.t0), source: .notification, app: harness.app, cause: "n-1")
        #expect(try SubscriptionStates.sent(try await framed(states, "6301")).stale)
        #expect(states.records.entry(key("6301"))?.answer == nil)
        #expect(try SubscriptionStates.sent(try await framed(states, "6301")).stale)
        #expect(apple.calls.withLock { $0 } == 2)
    }

    @Test func aWalkOverEveryRecordDoesNotFillTheCache() async throws {
        let apple = T.FakeApple { _ throws(GatewayError) in throw .deadlineExceeded(whileDoing: "unused") }
        let states = try harness.states(apple, clock: ManualClock(wall: WallTime(millisecondsSince1970: T.t0)))
        _ = try await states.apply(
            transaction: T.transaction("6101", purchased: T.t0, expires: T.t0 + 30 * T.day, signed: T.t0),
            renewal: nil, source: .notification, app: harness.app, cause: "n-1")
        #expect(try await states.storedRecord(key("6101"), remember: false) != nil)
        #expect(states.records.count == 0)
    }

    @Test func theCacheHoldsAtMostItsCapacity() throws {
        let record = SubscriptionRecord(key: key("1"))
        let stamp = RecordStamp(record)
        let cache = RecordCache(capacity: 2)
        for original in ["1", "2", "3", "4"] { cache.keep(record, stamp: stamp, for: key(original)) }
        #expect(cache.count == 2)
        #expect(cache.entry(key("1")) == nil && cache.entry(key("2")) == nil, "the oldest make room")
        #expect(cache.entry(key("3")) != nil && cache.entry(key("4")) != nil)
        cache.keep(record, stamp: stamp, for: key("4"))
        #expect(cache.count == 2, "keeping a held key again makes no room")
        // A key forgotten leaves room: the next key takes it, and the one after makes room from the oldest (4).
        cache.forget(key("3"))
        cache.keep(record, stamp: stamp, for: key("5"))
        #expect(cache.count == 2 && cache.entry(key("4")) != nil && cache.entry(key("5")) != nil)
        cache.keep(record, stamp: stamp, for: key("6"))
        #expect(cache.count == 2 && cache.entry(key("4")) == nil)
        #expect(cache.entry(key("5")) != nil && cache.entry(key("6")) != nil)
        // Many keys through a small cache: never more than its capacity, the last ones held.
        let small = RecordCache(capacity: 16)
        for original in 0..<1_000 { small.keep(record, stamp: stamp, for: key("k\(original)")) }
        #expect(small.count == 16)
        #expect((984..<1_000).allSatisfy { small.entry(key("k\($0)")) != nil })
        let none = RecordCache(capacity: 0)
        none.keep(record, stamp: stamp, for: key("1"))
        #expect(none.count == 0 && none.entry(key("1")) == nil)
    }
}
