import ProtoCodec
import SubscriptionState
import Testing

/// The ledger's rules: newest signedDate wins, a retry changes nothing, a tie resolves the same in any order,
/// a snapshot of another subscription is refused whole.
@Suite struct LedgerTests {
    typealias S = Snapshots

    func bought(signed: Int64 = S.at(0), tag: String = "") -> SignedTransaction {
        S.transaction("400", original: "400", purchased: S.at(0), expires: S.at(30), signed: signed, tag: tag)
    }

    @Test func aDuplicateChangesNothingAndKeepsTheVersion() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        #expect(record.version == 0)
        #expect(try record.apply(transaction: bought(), source: .notification, nowMillis: S.at(0)))
        #expect(record.version == 1)
        let before = record
        #expect(try !record.apply(transaction: bought(), source: .appleRead, nowMillis: S.at(5)))
        #expect(record == before)
        #expect(record.version == 1)
        #expect(record.updatedAtMillis == S.at(0))
        #expect(record.source == .notification)
    }

    @Test func anOlderSnapshotOfATransactionIsIgnored() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        let newer = S.transaction(
            "400", original: "400", purchased: S.at(0), expires: S.at(30), signed: S.at(10), revoked: S.at(10))
        try record.apply(transaction: newer, source: .notification, nowMillis: S.at(10))
        #expect(try !record.apply(transaction: bought(), source: .notification, nowMillis: S.at(11)))
        #expect(record.transactions["400"] == newer)
        #expect(record.version == 1)
    }

    @Test func aStaleRenewalInfoIsIgnored() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        let off = S.renewal(original: "400", autoRenew: false, signed: S.at(10))
        let on = S.renewal(original: "400", autoRenew: true, signed: S.at(5))
        try record.apply(transaction: bought(), renewalInfo: off, source: .notification, nowMillis: S.at(10))
        #expect(try !record.apply(renewalInfo: on, source: .notification, nowMillis: S.at(11)))
        #expect(record.renewalInfo == off)
        #expect(!record.state(at: S.at(12), policy: .defaults).autoRenew)
        #expect(record.version == 1)
    }

    @Test func aNewerRenewalWithAnOlderTransactionStillApplies() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        try record.apply(transaction: bought(signed: S.at(3)), source: .notification, nowMillis: S.at(3))
        let off = S.renewal(original: "400", autoRenew: false, signed: S.at(4))
        #expect(try record.apply(transaction: bought(), renewalInfo: off, source: .notification, nowMillis: S.at(4)))
        #expect(record.transactions["400"]?.signedDateMillis == S.at(3))
        #expect(record.renewalInfo == off)
        #expect(record.version == 2)
    }

    @Test func sameSignedDateDifferentBytesResolvesTheSameInEitherOrder() throws {
        let a = bought(signed: S.at(1), tag: "a")
        let b = bought(signed: S.at(1), tag: "b")
        var first = SubscriptionRecord(key: S.key("400"))
        try first.apply(transaction: a, source: .notification, nowMillis: 1)
        try first.apply(transaction: b, source: .notification, nowMillis: 2)
        var second = SubscriptionRecord(key: S.key("400"))
        try second.apply(transaction: b, source: .notification, nowMillis: 1)
        let changed = try second.apply(transaction: a, source: .notification, nowMillis: 2)
        #expect(!changed)
        #expect(first.transactions == second.transactions)
        #expect(first.transactions["400"] == b, "the JWS that sorts last wins")
        #expect(b.supersedes(a))
        #expect(!a.supersedes(b))
        #expect(!a.supersedes(a))
    }

    /// A tie is settled by the JWS bytes alone: a retry received again (its bytes in new storage) never
    /// supersedes, and a JWS that extends another sorts after it.
    @Test func tiesAreSettledByTheBytesWhereverTheyAreStored() {
        let held = bought(signed: S.at(1))
        let retry = SignedTransaction(jws: String(decoding: Array(held.jws.utf8), as: UTF8.self), payload: held.payload)
        #expect(!retry.supersedes(held) && !held.supersedes(retry))
        let longer = SignedTransaction(jws: held.jws + "A", payload: held.payload)
        #expect(longer.supersedes(held) && !held.supersedes(longer))
    }

    @Test func aSnapshotOfAnotherSubscriptionAppOrEnvironmentIsRefused() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        let renewal = S.renewal(original: "400", signed: S.at(1))
        let cases: [(SignedTransaction, SnapshotRefusal.Reason)] = [
            (
                S.transaction("500", original: "500", purchased: S.at(0), expires: S.at(30), signed: S.at(1)),
                .otherSubscription(expected: "400", found: "500")
            ),
            (
                S.transaction(
                    "401", original: "400", purchased: S.at(0), expires: S.at(30), signed: S.at(1),
                    bundle: "com.example.other"),
                .otherApp(expected: S.bundleId, found: "com.example.other")
            ),
            (
                S.transaction(
                    "401", original: "400", purchased: S.at(0), expires: S.at(30), signed: S.at(1),
                    environment: .production),
                .otherEnvironment(expected: .sandbox, found: .production)
            ),
            (
                S.transaction("", original: "400", purchased: S.at(0), expires: S.at(30), signed: S.at(1)),
                .missingTransactionId
            ),
        ]
        for (foreign, reason) in cases {
            #expect(throws: SnapshotRefusal(snapshot: .transaction, reason: reason)) {
                try record.apply(transaction: foreign, renewalInfo: renewal, source: .notification, nowMillis: 1)
            }
        }
        #expect(record == SubscriptionRecord(key: S.key("400")), "the matching renewal info was not applied either")
        #expect(
            throws: SnapshotRefusal(snapshot: .renewalInfo, reason: .otherSubscription(expected: "400", found: "9"))
        ) {
            try record.apply(renewalInfo: S.renewal(original: "9", signed: 1), source: .notification, nowMillis: 1)
        }
        #expect(
            throws: SnapshotRefusal(
                snapshot: .renewalInfo, reason: .otherEnvironment(expected: .sandbox, found: .xcode))
        ) {
            try record.apply(
                renewalInfo: S.renewal(original: "400", signed: 1, environment: .xcode), source: .notification,
                nowMillis: 1)
        }
        #expect(record.version == 0)
    }

    @Test func aRestoredRecordEqualsTheRecordItWasSavedFrom() throws {
        var record = SubscriptionRecord(key: S.key("400"))
        try record.apply(transaction: bought(), source: .notification, nowMillis: S.at(0))
        let renewal = S.transaction("401", original: "400", purchased: S.at(30), expires: S.at(60), signed: S.at(30))
        try record.apply(
            transaction: renewal, renewalInfo: S.renewal(original: "400", signed: S.at(30)), source: .appleRead,
            nowMillis: S.at(31))
        let restored = try SubscriptionRecord(
            restoring: record.key, transactions: [renewal, bought(), bought()], renewalInfo: record.renewalInfo,
            version: record.version, updatedAtMillis: record.updatedAtMillis, source: record.source)
        #expect(restored == record)
        #expect(throws: SnapshotRefusal.self) {
            try SubscriptionRecord(
                restoring: S.key("999"), transactions: [bought()], renewalInfo: nil, version: 1, updatedAtMillis: 0,
                source: nil)
        }
    }

    @Test func theKeyOfATransactionIsItsAppEnvironmentAndOriginalId() {
        let key = SubscriptionKey(of: bought().payload)
        #expect(key == S.key("400"))
    }
}
