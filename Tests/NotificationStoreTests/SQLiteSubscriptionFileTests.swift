import Foundation
import ProtoCodec
import SubscriptionState
import Testing

@testable import NotificationStore

/// What only the SQLite subscription store has: a file that may be damaged, a schema version, the analysts'
/// view, and the notification log beside it.
@Suite struct SQLiteSubscriptionFileTests {
    typealias S = StateSnapshots

    /// Runs `sql` on the file directly, as an analyst or a damaged disk would.
    private func execute(_ sql: String, on file: StoreFile) throws {
        try SQLiteDatabase(path: file.path).execute(sql)
    }

    private func failure(_ body: () async throws(NotificationStoreFailure) -> Void) async
        -> NotificationStoreFailure?
    {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test func aDamagedRowFailsItsReadsCleanlyAndLeavesTheOthersReadable() async throws {
        let file = try StoreFile()
        let store = try SQLiteNotificationStore(path: file.path).subscriptions
        _ = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1, token: "T")))
        _ = try await store.apply(S.change(S.transaction("t2", original: "o2", signed: 1, token: "T")))
        try execute(
            "UPDATE subscription_transactions SET payload = x'0aff' WHERE transaction_id = 't1'", on: file)

        let read = await failure { () async throws(NotificationStoreFailure) in _ = try await store.record(S.key("o1"))
        }
        #expect(read?.kind == .corrupt)
        let change = try S.change(S.transaction("t3", original: "o1", purchased: S.day, signed: 2))
        let apply = await failure { () async throws(NotificationStoreFailure) in _ = try await store.apply(change) }
        #expect(apply?.kind == .corrupt)
        let customer = await failure { () async throws(NotificationStoreFailure) in
            _ = try await store.customer(bundleId: S.bundleId, environment: S.environment, appAccountToken: "T")
        }
        #expect(customer?.kind == .corrupt)
        #expect(try await store.record(S.key("o2"))?.version == 1)
    }

    @Test func rowsThatDoNotMatchTheirKeysOrSourcesAreDamage() async throws {
        let file = try StoreFile()
        let store = try SQLiteNotificationStore(path: file.path).subscriptions
        for original in ["o1", "o2", "o3", "o4"] {
            _ = try await store.apply(
                S.change(
                    S.transaction("t-\(original)", original: original, signed: 1),
                    S.renewal(original: original, signed: 1)))
        }
        // A ledger row filed under another transaction id, an unknown source, a payload of zero bytes
        // (a transaction of no id), a renewal payload of zero bytes (a renewal info of no subscription).
        try execute(
            "UPDATE subscription_transactions SET transaction_id = 'tx' WHERE transaction_id = 't-o1'", on: file)
        try execute("UPDATE subscription_records SET source = 'gossip' WHERE original_transaction_id = 'o2'", on: file)
        try execute("UPDATE subscription_transactions SET payload = x'' WHERE transaction_id = 't-o3'", on: file)
        try execute(
            "UPDATE subscription_records SET renewal_payload = x'' WHERE original_transaction_id = 'o4'", on: file)
        for original in ["o1", "o2", "o3", "o4"] {
            let read = await failure { () async throws(NotificationStoreFailure) in
                _ = try await store.record(S.key(original))
            }
            #expect(read?.kind == .corrupt, "\(original)")
        }
    }

    @Test func aSnapshotLargerThanTheLimitIsNotLoaded() async throws {
        let file = try StoreFile()
        var limits = SubscriptionStoreLimits()
        limits.snapshotBytes = 64
        let store = try SQLiteNotificationStore(path: file.path, limits: limits).subscriptions
        // Written whole (a verified snapshot is not cut), refused when read back.
        _ = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1)))
        let read = await failure { () async throws(NotificationStoreFailure) in _ = try await store.record(S.key("o1"))
        }
        #expect(read?.kind == .corrupt)
    }

    @Test func aFileOfANewerReleaseIsRefusedAndAnOlderStateIsRebuilt() async throws {
        let file = try StoreFile()
        do {
            let store = try SQLiteNotificationStore(path: file.path)
            _ = try await store.insert(
                NewNotification(
                    uuid: "u1", signedDate: 1, bundleId: S.bundleId, environment: "Sandbox",
                    notificationType: "DID_RENEW", subtype: "", signedPayload: "jws"), receivedAt: 1)
            _ = try await store.subscriptions.apply(
                [S.change(S.transaction("t1", original: "o1", signed: 1))], projectedThrough: StorePosition(major: 1))
        }
        try execute("UPDATE state_progress SET schema_version = 99", on: file)
        #expect(throws: NotificationStoreFailure.self) { _ = try SQLiteNotificationStore(path: file.path) }

        // An older state (version 0 here) is dropped and made again; the notification log is untouched.
        try execute("UPDATE state_progress SET schema_version = 0", on: file)
        let reopened = try SQLiteNotificationStore(path: file.path)
        #expect(try await reopened.subscriptions.recordCount() == 0)
        #expect(try await reopened.subscriptions.projectedThrough() == .zero)
        #expect(try await reopened.lastPosition() == StorePosition(major: 1))
        _ = try await reopened.subscriptions.apply(S.change(S.transaction("t1", original: "o1", signed: 1)))
        #expect(try await reopened.subscriptions.recordCount() == 1)
    }

    @Test func theAnalystsViewShowsAppleStatusNow() async throws {
        let file = try StoreFile()
        let store = try SQLiteNotificationStore(path: file.path).subscriptions
        let year: Int64 = 365 * S.day
        // t0 is in 2023: a period ending 100 years later is active; one that ended in 2023 expired.
        _ = try await store.apply(
            S.change(S.transaction("a1", original: "active", expires: 100 * year, signed: 1, token: "T")))
        _ = try await store.apply(S.change(S.transaction("e1", original: "expired", signed: 1)))
        _ = try await store.apply(
            S.change(
                S.transaction("g1", original: "grace", signed: 1),
                S.renewal(original: "grace", inBillingRetry: true, graceEnds: 100 * year, signed: 2)))
        _ = try await store.apply(
            S.change(
                S.transaction("b1", original: "retry", signed: 1),
                S.renewal(original: "retry", inBillingRetry: true, signed: 2)))
        _ = try await store.apply(
            S.change(S.transaction("r1", original: "revoked", expires: 100 * year, signed: 2, revoked: 1)))
        _ = try await store.apply(S.change(nil, S.renewal(original: "pending", signed: 1), key: S.key("pending")))

        var rows: [String: (Int64, String)] = [:]
        var token = ""
        try SQLiteDatabase(path: file.path).query(
            "SELECT original_transaction_id, status, status_name, app_account_token FROM subscription_state", bind: []
        ) {
            rows[$0.text(0)] = ($0.integer(1), $0.text(2))
            if $0.text(0) == "active" { token = $0.text(3) }
            return true
        }
        #expect(rows["active"]?.0 == 1)
        #expect(rows["active"]?.1 == "active")
        #expect(rows["expired"]?.0 == 2)
        #expect(rows["retry"]?.0 == 3)
        #expect(rows["grace"]?.0 == 4)
        #expect(rows["revoked"]?.0 == 5)
        #expect(rows["pending"]?.0 == 0)
        #expect(token == "T")

        // The view agrees with the reducer's status now.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for original in ["active", "expired", "retry", "grace", "revoked"] {
            let record = try #require(try await store.record(S.key(original)))
            #expect(Int64(record.state(at: now, policy: .defaults).status.rawValue) == rows[original]?.0)
        }
    }
}
