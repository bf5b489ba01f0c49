import AppStoreDomain
import GatewayFoundation
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
        let states = try harness.states(apple, clock: clock)
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

        // The state removed (a rebuild): nothing is answered from the cache, and it forgets the record.
        try await states.store.removeAll()
        #expect(try await states.storedRecord(key("6001")) == nil)
        #expect(states.records.count == 0)
        #expect(apple.calls.withLock { $0 } == 0)
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
        cache.keep(record, stamp: stamp, for: key("4"))
        #expect(cache.count == 2, "keeping a held key again makes no room")
        let none = RecordCache(capacity: 0)
        none.keep(record, stamp: stamp, for: key("1"))
        #expect(none.count == 0 && none.entry(key("1")) == nil)
    }
}
