import AppStoreDomain
import AppleFixtures
import Cryptography
import Foundation
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState
import Testing

@testable import Services

/// `state export`'s rows: every record and purchase of the store, paged, derived at the export's instant as
/// GetSubscription and GetCustomer derive them, against both stores.
@Suite struct SubscriptionStateExportTests {
    typealias T = SubscriptionStatesTests
    static let bundle = T.bundle
    static let day = T.day
    static let t0 = T.t0
    static let token = "6f1c2c66-5f4b-4a1a-9e59-0c5c6b0e6e0d"
    static let lifetime = "com.example.app.lifetime"

    enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory, sqlite
        var testDescription: String { rawValue }
    }

    /// A store of `kind` (its SQLite file deleted with the returned directory's owner).
    static func make(_ kind: Store) throws -> (any SubscriptionStore, String?) {
        switch kind {
        case .memory:
            return (MemorySubscriptionStore(), nil)
        case .sqlite:
            let directory = NSTemporaryDirectory() + "export-tests-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return (try SQLiteNotificationStore(path: directory + "/notifications.db").subscriptions, directory)
        }
    }

    let app = {
        var app = App(
            name: "example", bundleId: bundle, appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ",
            privateKeyFile: "k", environment: .sandbox)
        app.entitlements = ["premium": ["com.example.app.premium.monthly"], "lifetime": [lifetime]]
        return app
    }()

    func states(_ store: any SubscriptionStore) throws -> SubscriptionStates {
        let apple = T.FakeApple { _ throws(GatewayError) in throw GatewayError.serverShuttingDown }
        var settings = SubscriptionStateSettings()
        settings.refundPolicy = .immediate
        let pki = try AppStoreTestPKI(referenceTime: Date())
        return SubscriptionStates(
            store: store, apps: AppDirectory([app]), policies: [app.name: settings.policy(for: app)],
            verifier: try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate])),
            clock: ManualClock(wall: WallTime(millisecondsSince1970: Self.t0)),
            metrics: SubscriptionStateMetrics(registry: nil)
        ) { request, _ throws(GatewayError) in try apple.answer(request) }
    }

    static func transaction(
        _ original: String, purchased: Int64, expires: Int64, revoked: Int64? = nil, bundle: String = bundle
    ) -> SignedTransaction {
        var made = T.transaction(original, purchased: purchased, expires: expires, signed: purchased)
        made.payload.bundleId = bundle
        made.payload.appAccountToken = token
        made.payload.inAppOwnershipType = .familyShared
        if let revoked {
            made.payload.revocationDateMillis = revoked
            made.payload.revocationDate = ProtoTimestamp(unixMilliseconds: revoked)
        }
        return made
    }

    static func renewal(_ original: String, signed: Int64, autoRenew: Bool) -> SignedRenewalInfo {
        var made = T.renewal(original, signed: signed)
        made.payload.autoRenewStatus = autoRenew ? .on : .off
        return made
    }

    static func purchase(_ id: String, product: String, revoked: Int64? = nil) -> SignedTransaction {
        var payload = Transaction()
        payload.transactionId = id
        payload.originalTransactionId = id
        payload.bundleId = bundle
        payload.productId = product
        payload.type = .nonConsumable
        payload.environment = .sandbox
        payload.inAppOwnershipType = .purchased
        payload.appAccountToken = token
        payload.purchaseDateMillis = t0 - day
        payload.signedDateMillis = t0 - day
        payload.purchaseDate = ProtoTimestamp(unixMilliseconds: t0 - day)
        payload.signedDate = ProtoTimestamp(unixMilliseconds: t0 - day)
        if let revoked {
            payload.revocationDateMillis = revoked
            payload.revocationDate = ProtoTimestamp(unixMilliseconds: revoked)
        }
        return SignedTransaction(jws: "eyJ.\(id).sig", payload: payload)
    }

    /// Active, expired (auto-renew off), revoked and expired-unconfirmed subscriptions, two purchases (one refunded,
    /// one with a crafted product id), and a record of an app no longer configured.
    func fill(_ store: any SubscriptionStore) async throws {
        let (t0, day) = (Self.t0, Self.day)
        let changes = [
            try SubscriptionChange(
                transaction: Self.transaction("3001", purchased: t0 - day, expires: t0 + 29 * day),
                renewalInfo: Self.renewal("3001", signed: t0 - day, autoRenew: true), source: .notification,
                nowMillis: t0 - 1000),
            try SubscriptionChange(
                transaction: Self.transaction("3002", purchased: t0 - 60 * day, expires: t0 - 30 * day),
                renewalInfo: Self.renewal("3002", signed: t0 - 40 * day, autoRenew: false), source: .appleRead,
                nowMillis: t0 - 2000),
            try SubscriptionChange(
                transaction: Self.transaction("3003", purchased: t0 - day, expires: t0 + 29 * day, revoked: t0 - 5),
                source: .appPosted, nowMillis: t0 - 3000),
            try SubscriptionChange(
                transaction: Self.transaction("3004", purchased: t0 - 40 * day, expires: t0 - 10 * day),
                renewalInfo: Self.renewal("3004", signed: t0 - 40 * day, autoRenew: true), source: .notification,
                nowMillis: t0 - 4000),
            try SubscriptionChange(
                transaction: Self.purchase("4001", product: Self.lifetime), source: .notification, nowMillis: t0 - 5000),
            try SubscriptionChange(
                transaction: Self.purchase("4002", product: Self.lifetime, revoked: t0 - 7), source: .notification,
                nowMillis: t0 - 6000),
            try SubscriptionChange(
                transaction: Self.purchase("4003", product: "=HYPERLINK(\"http://x\",\"y\")"), source: .appPosted,
                nowMillis: t0 - 7000),
            try SubscriptionChange(
                transaction: Self.transaction("9001", purchased: t0 - day, expires: t0 + day, bundle: "com.gone"),
                source: .notification, nowMillis: t0 - 8000),
        ]
        _ = try await store.apply(changes, projectedThrough: nil)
    }

    /// Every row of an export, by original transaction id, as column → value.
    static func rows(_ export: inout SubscriptionStateExport) async throws -> [String: [String: String]] {
        var rows: [String: [String: String]] = [:]
        while let page = try await export.nextRows() {
            #expect(!page.isEmpty)
            for row in page {
                #expect(row.count == SubscriptionStateExport.columns.count)
                let named = Dictionary(uniqueKeysWithValues: zip(SubscriptionStateExport.columns, row))
                rows[named["original_transaction_id"] ?? ""] = named
            }
        }
        return rows
    }

    @Test(arguments: Store.allCases)
    func everyRecordAndPurchaseIsARowDerivedAsTheRPCsDeriveIt(_ kind: Store) async throws {
        let (store, directory) = try Self.make(kind)
        defer { directory.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await fill(store)
        let states = try states(store)
        var export = SubscriptionStateExport(states: states, bundleId: nil, environment: nil, nowMillis: Self.t0)
        let rows = try await Self.rows(&export)
        #expect(export.subscriptions == 4)
        #expect(export.purchases == 3)
        #expect(export.skipped == 1)
        #expect(rows["9001"] == nil)

        let active = try #require(rows["3001"])
        #expect(active["kind"] == "subscription")
        #expect(active["app"] == "example")
        #expect(active["bundle_id"] == Self.bundle)
        #expect(active["environment"] == "Sandbox")
        #expect(active["transaction_id"] == "3001")
        #expect(active["product_id"] == "com.example.app.premium.monthly")
        #expect(active["subscription_group_identifier"] == "g")
        #expect(active["status"] == "1")
        #expect(active["status_name"] == "active")
        #expect(active["entitled"] == "true")
        #expect(active["entitlements"] == "premium")
        #expect(active["expires_date"] == RFC3339.string(milliseconds: Self.t0 + 29 * Self.day))
        #expect(active["expires_date"] == "2025-07-14T15:06:40.000Z")
        #expect(active["grace_period_expires_date"] == "")
        #expect(active["auto_renew"] == "true")
        #expect(active["auto_renew_product_id"] == "com.example.app.premium.monthly")
        #expect(active["in_billing_retry"] == "false")
        #expect(active["revocation_date"] == "")
        #expect(active["ownership_type"] == "FAMILY_SHARED")
        #expect(active["app_account_token"] == Self.token)
        #expect(active["stale"] == "false")
        #expect(active["version"] == "1")
        #expect(active["updated_at"] == RFC3339.string(milliseconds: Self.t0 - 1000))
        #expect(active["source"] == "notification")

        let expired = try #require(rows["3002"])
        #expect(expired["status"] == "2" && expired["status_name"] == "expired")
        #expect(expired["entitled"] == "false" && expired["entitlements"] == "")
        #expect(expired["auto_renew"] == "false" && expired["stale"] == "false")
        #expect(expired["source"] == "appleRead")

        let revoked = try #require(rows["3003"])
        #expect(revoked["status"] == "5" && revoked["status_name"] == "revoked")
        #expect(revoked["entitled"] == "false" && revoked["entitlements"] == "")
        #expect(revoked["revocation_date"] == RFC3339.string(milliseconds: Self.t0 - 5))
        #expect(revoked["auto_renew"] == "false" && revoked["auto_renew_product_id"] == "")
        #expect(revoked["source"] == "appPosted")

        // Past its expiry, auto-renew on, nothing signed since: GetSubscription would ask Apple first.
        let unconfirmed = try #require(rows["3004"])
        #expect(unconfirmed["status_name"] == "expired" && unconfirmed["stale"] == "true")

        let bought = try #require(rows["4001"])
        #expect(bought["kind"] == "purchase")
        #expect(bought["transaction_id"] == "4001" && bought["product_id"] == Self.lifetime)
        #expect(bought["status"] == "" && bought["status_name"] == "")
        #expect(bought["entitled"] == "true" && bought["entitlements"] == "lifetime")
        #expect(bought["expires_date"] == "" && bought["auto_renew"] == "" && bought["version"] == "")
        #expect(bought["ownership_type"] == "PURCHASED" && bought["app_account_token"] == Self.token)
        #expect(bought["updated_at"] == RFC3339.string(milliseconds: Self.t0 - 5000))
        let refunded = try #require(rows["4002"])
        #expect(refunded["entitled"] == "false" && refunded["entitlements"] == "")
        #expect(refunded["revocation_date"] == RFC3339.string(milliseconds: Self.t0 - 7))
        // A crafted product id is kept as it is in the row; the CSV writer neutralizes it.
        let crafted = try #require(rows["4003"])
        #expect(crafted["product_id"] == "=HYPERLINK(\"http://x\",\"y\")")
        #expect(CSV.field(crafted["product_id"] ?? "") == #""'=HYPERLINK(""http://x"",""y"")""#)

        // Each subscription row says what GetSubscription's answer of the same record says at the same instant.
        for original in ["3001", "3002", "3003", "3004"] {
            let record = try #require(
                try await store.record(
                    SubscriptionKey(bundleId: Self.bundle, environment: .sandbox, originalTransactionId: original)))
            let answer = states.subscriptionMessage(record, app: app, stale: false)
            let row = try #require(rows[original])
            #expect(row["status"] == String(answer.status.rawValue))
            #expect(row["entitled"] == String(answer.entitled))
            #expect(row["entitlements"] == answer.entitlements.joined(separator: ";"))
            #expect(row["expires_date"] == answer.expiresDate.map { RFC3339.string(milliseconds: $0.unixMilliseconds) })
            #expect(row["auto_renew"] == String(answer.autoRenew))
            #expect(row["product_id"] == answer.productId)
            #expect(row["version"] == String(answer.version))
        }
        // And each purchase what GetCustomer's entitlements say of it.
        let customer = try await store.customer(
            SubscriptionKey(bundleId: Self.bundle, environment: .sandbox, originalTransactionId: "4001"))
        let granted = customer.entitlements(at: Self.t0, policy: states.policy(of: app)).filter(\.active).map(\.name)
        #expect(rows["4001"]?["entitlements"] == granted.joined(separator: ";"))
    }

    @Test(arguments: Store.allCases)
    func aSelectionKeepsOneAppOrEnvironment(_ kind: Store) async throws {
        let (store, directory) = try Self.make(kind)
        defer { directory.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await fill(store)
        let states = try states(store)
        var sandbox = SubscriptionStateExport(
            states: states, bundleId: Self.bundle, environment: .sandbox, nowMillis: Self.t0)
        #expect(try await Self.rows(&sandbox).count == 7)
        #expect(sandbox.skipped == 0)
        var production = SubscriptionStateExport(
            states: states, bundleId: Self.bundle, environment: .production, nowMillis: Self.t0)
        #expect(try await production.nextRows() == nil)
        var other = SubscriptionStateExport(states: states, bundleId: "com.gone", environment: nil, nowMillis: Self.t0)
        #expect(try await other.nextRows() == nil)
        #expect(other.skipped == 1)
    }

    @Test func aStateOfManyPagesIsExportedWhole() async throws {
        let store = MemorySubscriptionStore()
        let count = SubscriptionStateExport.pageSize * 2 + 7
        let changes = try (0..<count).map { index in
            let original = String(5000 + index)
            return try SubscriptionChange(
                transaction: Self.transaction(original, purchased: Self.t0 - Self.day, expires: Self.t0 + Self.day),
                source: .notification, nowMillis: Self.t0)
        }
        _ = try await store.apply(changes, projectedThrough: nil)
        var export = SubscriptionStateExport(
            states: try states(store), bundleId: nil, environment: nil, nowMillis: Self.t0)
        var pages = 0
        var seen = Set<String>()
        while let page = try await export.nextRows() {
            #expect(page.count <= SubscriptionStateExport.pageSize)
            pages += 1
            for row in page { seen.insert(row[4]) }
        }
        #expect(pages == 3)
        #expect(seen.count == count)
        #expect(export.subscriptions == count)
    }

    @Test func theServiceResolvesTheAppOrRefuses() async throws {
        let states = try states(MemorySubscriptionStore())
        let service = SubscriptionStateService(
            states: states,
            events: SubscriptionEventsHandler(
                states: states,
                tokens: SubscriptionEventTokenCodec(
                    ring: ResumeTokenKeyRing(keys: [Array(repeating: 1, count: 32)]), maxAge: .seconds(60))))
        for name in ["example", Self.bundle] {
            var export = try service.export(app: name, environment: .sandbox)
            #expect(try await export.nextRows() == nil)
            #expect(export.nowMillis == Self.t0)
        }
        #expect(throws: GatewayError.unknownApp("nope")) { try service.export(app: "nope", environment: nil) }
        let none = SubscriptionStateService(unavailable: "no store")
        #expect(throws: GatewayError.stateNotKept("no store")) { try none.export(app: nil, environment: nil) }
    }
}
