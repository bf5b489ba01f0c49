import Foundation
import NotificationStore
import ProtoCodec
import SubscriptionState
import TestSupport
import Testing

/// Which subscription store a test runs against: every behaviour test runs against each, so the in-memory
/// store the layers above test with, and the fleet's PostgreSQL store, keep the SQLite store's semantics.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case memory
    case postgres

    /// PostgreSQL where a server can be started here.
    static var allCases: [StoreKind] { [.sqlite, .memory] + (PostgresProcess.available ? [.postgres] : []) }

    var testDescription: String { rawValue }

    /// A fresh store, and what keeps it alive until the test ends (its SQLite file, its PostgreSQL database;
    /// nil in memory).
    func make(limits: SubscriptionStoreLimits = .defaults) async throws -> (any SubscriptionStore, AnyObject?) {
        switch self {
        case .memory:
            return (MemorySubscriptionStore(limits: limits), nil)
        case .sqlite:
            let file = try StoreFile()
            return (try SQLiteNotificationStore(path: file.path, limits: limits).subscriptions, file)
        case .postgres:
            let fixture = try await PostgresStoreFixture()
            return (try await PostgresSubscriptionStore(fixture.database, limits: limits), fixture)
        }
    }
}

/// A notification-store file in a directory of its own, deleted with the value.
final class StoreFile: Sendable {
    let directory: String
    var path: String { directory + "/notifications.db" }

    init() throws {
        directory = NSTemporaryDirectory() + "subscription-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// The subscription store's contract, against every implementation.
@Suite struct SubscriptionStoreTests {
    typealias S = StateSnapshots

    @Test(arguments: StoreKind.allCases)
    func anAppliedChangeReadsBackWithItsJWSAndPayloadsExactly(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let transaction = S.transaction("t1", original: "o1", signed: 10, token: "A-TOKEN")
        let renewal = S.renewal(original: "o1", signed: 11)
        let applied = try await store.apply(S.change(transaction, renewal, now: 100))
        #expect(applied.changed)
        #expect(applied.purchase == nil)

        var expected = SubscriptionRecord(key: S.key("o1"))
        try expected.apply(transaction: transaction, renewalInfo: renewal, source: .notification, nowMillis: S.t0 + 100)
        #expect(applied.record == expected)
        let read = try #require(try await store.record(S.key("o1")))
        #expect(read == expected)
        #expect(read.version == 1)
        #expect(read.updatedAtMillis == S.t0 + 100)
        #expect(read.source == .notification)
        let held = try #require(read.transactions["t1"])
        #expect(Array(held.jws.utf8) == Array(transaction.jws.utf8))
        #expect(held.payload == transaction.payload)
        #expect(held.payload.rawJson == transaction.payload.rawJson)
        #expect(read.renewalInfo?.jws == renewal.jws)
        #expect(read.renewalInfo?.payload == renewal.payload)
        #expect(try await store.record(S.key("unknown")) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func theCurrentRecordHasTheWholeRecordsStateAndAnswer(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let day = S.day
        // A year of monthly renewals, an upgrade in the last period, and a refund of an earlier period signed
        // after everything else: the current transaction is the upgrade's, chosen by its dates.
        var snapshots = (0..<12).map { month in
            S.transaction(
                "t\(month)", original: "o1", purchased: Int64(month) * 30 * day,
                expires: Int64(month + 1) * 30 * day, signed: Int64(month) * 30 * day)
        }
        var upgraded = snapshots[11].payload
        upgraded.isUpgraded = true
        snapshots[11] = SignedTransaction(jws: snapshots[11].jws + "u", payload: upgraded)
        snapshots.append(
            S.transaction(
                "t-pro", original: "o1", product: "reader.pro", purchased: 340 * day, expires: 370 * day,
                signed: 340 * day))
        snapshots.append(
            S.transaction(
                "t3", original: "o1", purchased: 90 * day, expires: 120 * day, signed: 350 * day, revoked: 349 * day))
        for snapshot in snapshots {
            _ = try await store.apply(S.change(snapshot, S.renewal(original: "o1", signed: 10), now: 1))
        }
        let whole = try #require(try await store.record(S.key("o1")))
        #expect(whole.transactions.count == 13)  // the refund replaced t3's snapshot
        let current = try #require(try await store.currentRecord(S.key("o1")))
        #expect(current.currentTransaction == whole.currentTransaction)
        #expect(current.currentTransaction?.payload.transactionId == "t-pro")
        if kind != .memory { #expect(current.transactions.count == 1) }
        #expect(current.renewalInfo == whole.renewalInfo)
        #expect(current.version == whole.version)
        #expect(current.updatedAtMillis == whole.updatedAtMillis)
        #expect(current.source == whole.source)
        let policies = [SubscriptionPolicy.defaults, SubscriptionPolicy(refundPolicy: .untilExpiry)]
        for policy in policies {
            for instant in [0, 100 * day, 345 * day, 369 * day, 371 * day, 500 * day] {
                #expect(
                    current.state(at: S.t0 + instant, policy: policy) == whole.state(at: S.t0 + instant, policy: policy)
                )
            }
        }
        // A record of renewal info alone names no transaction: it is read whole, the same.
        _ = try await store.apply(
            S.change(nil, S.renewal(original: "o2", signed: 5), key: S.key("o2"), now: 2))
        #expect(try await store.currentRecord(S.key("o2")) == store.record(S.key("o2")))
        #expect(try await store.currentRecord(S.key("o2")) != nil)
        #expect(try await store.currentRecord(S.key("unknown")) == nil)
    }

    /// A stamped read (what GetSubscription's record cache asks): the record and its stamp the first time;
    /// `.unchanged` while the stored record still has that stamp; the new record after any change (a newer
    /// snapshot, renewal info alone) or after the state was removed and made again; `.missing` for none.
    @Test(arguments: StoreKind.allCases)
    func aStampedReadIsUnchangedUntilTheRecordChanges(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let key = S.key("o1")
        #expect(try await store.currentRecord(key, unlessStamped: nil).isMissing)
        let missingStamp = RecordStamp(version: 1, updatedAtMillis: 1, currentTransactionId: "t1")
        #expect(try await store.currentRecord(key, unlessStamped: missingStamp).isMissing)
        _ = try await store.apply(
            S.change(
                S.transaction("t1", original: "o1", purchased: 0, expires: 30 * S.day, signed: 0),
                S.renewal(original: "o1", signed: 0), now: 1))
        guard case .record(let first, let stamp) = try await store.currentRecord(key, unlessStamped: nil) else {
            Issue.record("the stored record must be read")
            return
        }
        #expect(first == (try await store.currentRecord(key)))
        #expect(stamp == RecordStamp(first))
        #expect(stamp.currentTransactionId == "t1")
        #expect(try await store.currentRecord(key, unlessStamped: stamp).isUnchanged)
        // Someone else's stamp of the same record (an older read): the record again.
        var older = stamp
        older.version -= 1
        guard case .record(let again, let againStamp) = try await store.currentRecord(key, unlessStamped: older) else {
            Issue.record("an older stamp must read the record")
            return
        }
        #expect(again == first && againStamp == stamp)

        // A renewal: a new current transaction, a new stamp.
        _ = try await store.apply(
            S.change(
                S.transaction("t2", original: "o1", purchased: 30 * S.day, expires: 60 * S.day, signed: 30 * S.day),
                now: 2))
        guard case .record(let renewed, let renewedStamp) = try await store.currentRecord(key, unlessStamped: stamp)
        else {
            Issue.record("a changed record must be read")
            return
        }
        #expect(renewed.currentTransaction?.payload.transactionId == "t2")
        #expect(renewedStamp.version == stamp.version + 1 && renewedStamp.currentTransactionId == "t2")
        // Renewal info alone: same current transaction, a new version.
        _ = try await store.apply(S.change(nil, S.renewal(original: "o1", signed: 40 * S.day), key: key, now: 3))
        guard
            case .record(let withRenewal, let renewalStamp) = try await store.currentRecord(
                key, unlessStamped: renewedStamp)
        else {
            Issue.record("renewal info alone must change the stamp")
            return
        }
        #expect(withRenewal.renewalInfo?.signedDateMillis == S.t0 + 40 * S.day)
        #expect(renewalStamp.version == renewedStamp.version + 1)
        // A duplicate changes nothing: still unchanged.
        _ = try await store.apply(S.change(nil, S.renewal(original: "o1", signed: 40 * S.day), key: key, now: 4))
        #expect(try await store.currentRecord(key, unlessStamped: renewalStamp).isUnchanged)

        // Removed and made again (a rebuild) with the same number of changes: a later update time, a new stamp.
        try await store.removeAll()
        #expect(try await store.currentRecord(key, unlessStamped: renewalStamp).isMissing)
        for (index, snapshot) in [("t1", 0), ("t2", 30), ("t3", 60)].enumerated() {
            _ = try await store.apply(
                S.change(
                    S.transaction(
                        snapshot.0, original: "o1", purchased: Int64(snapshot.1) * S.day,
                        expires: Int64(snapshot.1 + 30) * S.day, signed: Int64(snapshot.1) * S.day),
                    now: 100 + Int64(index)))
        }
        guard case .record(_, let rebuilt) = try await store.currentRecord(key, unlessStamped: renewalStamp) else {
            Issue.record("a record made again must be read")
            return
        }
        #expect(rebuilt.version == renewalStamp.version)
        #expect(rebuilt != renewalStamp)
    }

    @Test(arguments: StoreKind.allCases)
    func aDuplicateOrOlderSnapshotChangesNothing(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let newer = S.transaction("t1", original: "o1", signed: 20, revoked: 15)
        let older = S.transaction("t1", original: "o1", signed: 10)
        #expect(try await store.apply(S.change(newer, now: 1)).changed)
        let again = try await store.apply(S.change(newer, now: 2))
        #expect(!again.changed)
        #expect(again.record?.version == 1)
        #expect(again.record?.updatedAtMillis == S.t0 + 1)
        let late = try await store.apply(S.change(older, now: 3))
        #expect(!late.changed)
        let read = try #require(try await store.record(S.key("o1")))
        #expect(read.version == 1)
        #expect(read.transactions["t1"] == newer)
        // A renewal info alone (its key given) applies to the same record.
        let renewal = try await store.apply(S.change(nil, S.renewal(original: "o1", signed: 30), key: S.key("o1")))
        #expect(renewal.changed)
        #expect(renewal.record?.version == 2)
        #expect(try await store.record(S.key("o1"))?.renewalInfo?.payload.signedDateMillis == S.t0 + 30)
    }

    @Test func theNewestSnapshotWinsAcrossRestarts() async throws {
        let file = try StoreFile()
        let newer = S.transaction("t1", original: "o1", signed: 20, revoked: 15)
        do {
            let store = try SQLiteNotificationStore(path: file.path).subscriptions
            _ = try await store.apply(S.change(newer, S.renewal(original: "o1", signed: 21), now: 5))
            _ = try await store.apply(S.change(S.transaction("t2", original: "o1", purchased: 30 * S.day, signed: 22)))
        }
        let reopened = try SQLiteNotificationStore(path: file.path).subscriptions
        let late = try await reopened.apply(
            S.change(S.transaction("t1", original: "o1", signed: 10), S.renewal(original: "o1", signed: 12)))
        #expect(!late.changed)
        let read = try #require(try await reopened.record(S.key("o1")))
        #expect(read.version == 2)
        #expect(read.transactions["t1"] == newer)
        #expect(read.transactions.count == 2)
        #expect(read.currentTransaction?.payload.transactionId == "t2")
        #expect(read.renewalInfo?.payload.signedDateMillis == S.t0 + 21)
        #expect(read == late.record)
    }

    @Test(arguments: StoreKind.allCases)
    func oneTimePurchasesAreKeptApartAndConsumablesIgnored(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let book = S.transaction(
            "p1", original: "p1", product: "book", expires: nil, signed: 10, type: .nonConsumable, token: "T")
        let pass = S.transaction(
            "p2", original: "p2", product: "season.pass", expires: nil, signed: 11, type: .nonRenewable, token: "T")
        let coins = S.transaction(
            "c1", original: "c1", product: "coins", expires: nil, signed: 12, type: .consumable, token: "T")
        let kept = try await store.apply(S.change(book))
        #expect(kept.changed)
        #expect(kept.record == nil)
        #expect(kept.purchase == book)
        #expect(try await store.apply(S.change(pass)).changed)
        let ignored = try await store.apply(S.change(coins))
        #expect(ignored == AppliedChange(record: nil, purchase: nil, changed: false))
        for id in ["p1", "p2", "c1"] { #expect(try await store.record(S.key(id)) == nil) }

        // The refund of the book is newer: it replaces the purchase; the original snapshot again does not.
        let refunded = S.transaction(
            "p1", original: "p1", product: "book", expires: nil, signed: 20, revoked: 19, type: .nonConsumable,
            token: "T")
        #expect(try await store.apply(S.change(refunded)).changed)
        let stale = try await store.apply(S.change(book))
        #expect(!stale.changed)
        #expect(stale.purchase == refunded)

        let customer = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "T")
        #expect(customer.subscriptions.isEmpty)
        #expect(customer.purchases == [refunded, pass])
        let byId = try await store.customer(S.key("p2"))
        #expect(byId.purchases == [pass])
        #expect(byId.subscriptions.isEmpty)
        let other = try await store.customer(bundleId: "com.other", environment: S.environment, appAccountToken: "T")
        #expect(other.purchases.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func purchasesAreWalkedInKeyOrderOnePageAtATime(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        func purchase(_ id: String, bundle: String, _ environment: Environment, signed: Int64) -> SignedTransaction {
            var made = S.transaction(
                id, original: id, product: "book", expires: nil, signed: signed, type: .nonConsumable, bundle: bundle)
            made.payload.environment = environment
            return made
        }
        // Stored out of order; the walk's order is bundle id, environment name, transaction id, as bytes.
        let stored = [
            purchase("9", bundle: "com.b", .sandbox, signed: 1), purchase("10", bundle: "com.b", .sandbox, signed: 2),
            purchase("5", bundle: "com.b", .production, signed: 3), purchase("7", bundle: "com.a", .sandbox, signed: 4),
            purchase("é1", bundle: "com.a", .sandbox, signed: 5),
        ]
        for (index, snapshot) in stored.enumerated() {
            _ = try await store.apply(S.change(snapshot, source: index == 0 ? .appPosted : .notification, now: 100))
        }
        // A subscription and a consumable are no purchases.
        _ = try await store.apply(S.change(S.transaction("s1", original: "s1", signed: 6)))
        _ = try await store.apply(
            S.change(S.transaction("c1", original: "c1", expires: nil, signed: 7, type: .consumable)))
        // A newer snapshot replaces the purchase it walks.
        let refunded = purchase("10", bundle: "com.b", .sandbox, signed: 20)
        var revoked = refunded
        revoked.payload.revocationDateMillis = S.t0 + 19
        _ = try await store.apply(S.change(revoked, now: 200))

        var walked: [StoredPurchase] = []
        var pages = 0
        var after: PurchaseKey?
        while case let page = try await store.purchases(after: after, limit: 2), !page.isEmpty {
            #expect(page.count <= 2)
            walked += page
            pages += 1
            after = page.last?.key
        }
        #expect(pages == 3)
        #expect(
            walked.map { "\($0.key.bundleId)/\(AppleNames.environment($0.key.environment))/\($0.key.transactionId)" }
                == ["com.a/Sandbox/7", "com.a/Sandbox/é1", "com.b/Production/5", "com.b/Sandbox/10", "com.b/Sandbox/9"])
        #expect(walked[3].purchase == revoked)
        #expect(walked[3].updatedAtMillis == S.t0 + 200)
        #expect(walked[3].source == .notification)
        #expect(walked[4].purchase == stored[0])
        #expect(walked[4].updatedAtMillis == S.t0 + 100)
        #expect(walked[4].source == .appPosted)
        #expect(try await store.purchases(after: nil, limit: 0).isEmpty)
        #expect(try await store.purchases(after: walked[4].key, limit: 10).isEmpty)
        #expect(try await store.purchases(after: walked[1].key, limit: 1).map(\.key) == [walked[2].key])
        try await store.removeAll()
        #expect(try await store.purchases(after: nil, limit: 10).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aCustomerIsEveryRecordAndPurchaseOfTheirToken(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        let token = "6F1C2C66-5F4B-4A1A-9E59-0C5C6B0E6E0D"
        let reader = S.transaction("r1", original: "r", signed: 1, token: token)
        let audio = S.transaction("a1", original: "a", group: "group.audio", signed: 2, token: token)
        let shared = S.transaction("f1", original: "f", signed: 3, ownership: .familyShared, token: token)
        let stranger = S.transaction("s1", original: "s", signed: 4, token: "OTHER")
        let book = S.transaction("b1", original: "b1", expires: nil, signed: 5, type: .nonConsumable, token: token)
        _ = try await store.apply([S.change(reader), S.change(audio), S.change(shared)], projectedThrough: nil)
        _ = try await store.apply(S.change(stranger))
        _ = try await store.apply(S.change(book))
        // A record whose transaction has no token is found by its renewal info's.
        _ = try await store.apply(
            S.change(S.transaction("n1", original: "n", signed: 6), S.renewal(original: "n", signed: 6, token: token)))

        let customer = try await store.customer(
            bundleId: S.bundleId, environment: S.environment, appAccountToken: token)
        #expect(customer.subscriptions.map(\.key.originalTransactionId) == ["a", "f", "n", "r"])
        #expect(customer.subscriptions.first { $0.key.originalTransactionId == "f" }?.transactions["f1"] == shared)
        #expect(customer.purchases == [book])
        let empty = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "")
        #expect(empty.subscriptions.isEmpty && empty.purchases.isEmpty)
        let production = try await store.customer(
            bundleId: S.bundleId, environment: .production, appAccountToken: token)
        #expect(production.subscriptions.isEmpty)

        // A renewal under another token moves the record to that customer.
        _ = try await store.apply(
            S.change(S.transaction("r2", original: "r", purchased: 30 * S.day, signed: 40, token: "NEW")))
        let after = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: token)
        #expect(after.subscriptions.map(\.key.originalTransactionId) == ["a", "f", "n"])
        let moved = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "NEW")
        #expect(moved.subscriptions.map(\.key.originalTransactionId) == ["r"])
        let byKey = try await store.customer(S.key("r"))
        #expect(byKey.subscriptions.map(\.version) == [2])
    }

    @Test(arguments: StoreKind.allCases)
    func theProjectionPositionIsKeptAndMovesWithABatch(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        #expect(try await store.projectedThrough() == .zero)
        try await store.setProjectedThrough(StorePosition(major: 7, minor: 2))
        #expect(try await store.projectedThrough() == StorePosition(major: 7, minor: 2))
        let applied = try await store.apply(
            [
                S.change(S.transaction("t1", original: "o1", signed: 1)),
                S.change(S.transaction("t1", original: "o1", signed: 1)),
            ], projectedThrough: StorePosition(major: 9))
        #expect(applied.map(\.changed) == [true, false])
        #expect(try await store.projectedThrough() == StorePosition(major: 9))
        let large = StorePosition(major: UInt64.max, minor: UInt64.max - 1)
        _ = try await store.apply([], projectedThrough: large)
        #expect(try await store.projectedThrough() == large)
    }

    @Test func theProjectionPositionSurvivesARestart() async throws {
        let file = try StoreFile()
        do {
            let store = try SQLiteNotificationStore(path: file.path).subscriptions
            _ = try await store.apply(
                [S.change(S.transaction("t1", original: "o1", signed: 1))], projectedThrough: StorePosition(major: 42))
        }
        let reopened = try SQLiteNotificationStore(path: file.path).subscriptions
        #expect(try await reopened.projectedThrough() == StorePosition(major: 42))
        #expect(try await reopened.recordCount() == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func removeAllForgetsEverything(_ kind: StoreKind) async throws {
        let (store, file) = try await kind.make()
        defer { withExtendedLifetime(file) {} }
        _ = try await store.apply(
            [
                S.change(S.transaction("t1", original: "o1", signed: 1, token: "T")),
                S.change(
                    S.transaction("p1", original: "p1", expires: nil, signed: 2, type: .nonConsumable, token: "T")),
            ], projectedThrough: StorePosition(major: 5))
        try await store.removeAll()
        #expect(try await store.record(S.key("o1")) == nil)
        #expect(try await store.projectedThrough() == .zero)
        let customer = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "T")
        #expect(customer.subscriptions.isEmpty && customer.purchases.isEmpty)
        // Replaying starts from version 1 again.
        let replayed = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1, token: "T")))
        #expect(replayed.record?.version == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordOrCustomerPastTheLimitsFailsWithoutChangingAnything(_ kind: StoreKind) async throws {
        var limits = SubscriptionStoreLimits()
        limits.transactionsPerRead = 2
        limits.purchasesPerCustomer = 1
        let (store, file) = try await kind.make(limits: limits)
        defer { withExtendedLifetime(file) {} }
        _ = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1)))
        _ = try await store.apply(S.change(S.transaction("t2", original: "o1", purchased: 30 * S.day, signed: 2)))
        let third = S.transaction("t3", original: "o1", purchased: 60 * S.day, signed: 3)
        let batch = try [S.change(S.transaction("x1", original: "x", signed: 1)), S.change(third)]
        await #expect(throws: NotificationStoreFailure.self) {
            _ = try await store.apply(batch, projectedThrough: StorePosition(major: 3))
        }
        let alone = try S.change(third)
        do throws(NotificationStoreFailure) {
            _ = try await store.apply(alone)
            Issue.record("a third transaction must not fit")
        } catch {
            #expect(error.kind == .limitExceeded)
        }
        // The failed batch kept nothing: not its first change, not its position.
        #expect(try await store.record(S.key("x")) == nil)
        #expect(try await store.projectedThrough() == .zero)
        #expect(try await store.record(S.key("o1"))?.transactions.count == 2)

        for id in ["p1", "p2"] {
            _ = try await store.apply(
                S.change(S.transaction(id, original: id, expires: nil, signed: 1, type: .nonConsumable, token: "T")))
        }
        do throws(NotificationStoreFailure) {
            _ = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "T")
            Issue.record("two purchases must not fit in one read")
        } catch {
            #expect(error.kind == .limitExceeded)
        }
    }

    @Test func aChangeOfAnotherSubscriptionIsRefusedBeforeAnyStore() throws {
        let transaction = S.transaction("t1", original: "o1", signed: 1)
        #expect(throws: SnapshotRefusal.self) {
            _ = try SubscriptionChange(
                key: S.key("o2"), transaction: transaction, renewalInfo: nil, source: .appPosted, nowMillis: 0)
        }
        #expect(throws: SnapshotRefusal.self) {
            _ = try SubscriptionChange(
                transaction: transaction, renewalInfo: S.renewal(original: "o2", signed: 1), source: .appleRead,
                nowMillis: 0)
        }
    }
}

extension CurrentRead {
    var isMissing: Bool {
        if case .missing = self { return true }
        return false
    }
    var isUnchanged: Bool {
        if case .unchanged = self { return true }
        return false
    }
}
