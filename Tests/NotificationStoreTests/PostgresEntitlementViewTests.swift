import Foundation
import NotificationStore
import Postgres
import ProtoCodec
import SubscriptionState
import TestSupport
import Testing

/// The analysts' view's entitlement columns (`PostgresSchema.entitlements`): what the policy the replicas publish
/// (`PostgresSubscriptionStore.publish(policies:)`) grants, by the reducer's rules, at the server's clock.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresEntitlementViewTests {
    typealias S = StateSnapshots

    static let other = "com.example.other"

    /// A subscription's entitlement columns in the view.
    struct Row: Equatable, CustomStringConvertible {
        var status: Int64
        var entitled: Bool
        /// `entitlements` in PostgreSQL's text form: `{all,pro}`.
        var entitlements: String
        var description: String { "\(status) \(entitled) \(entitlements)" }
    }

    /// The view's rows by original transaction id (every test's ids are unique across bundle ids).
    static func view(_ pool: PostgresPool) async throws -> [String: Row] {
        let rows = try await pool.query(
            "SELECT original_transaction_id, status, entitled, entitlements::text FROM subscription_state")
        var view: [String: Row] = [:]
        for row in rows {
            view[try row[0].string() ?? ""] = Row(
                status: try row[1].int() ?? -1, entitled: try row[2].bool() ?? false,
                entitlements: try row[3].string() ?? "NULL")
        }
        return view
    }

    /// One subscription of each kind the columns tell apart, `now` being the wall clock in UNIX ms.
    static func apply(to store: PostgresSubscriptionStore, now: Int64) async throws {
        let ahead = now - S.t0 + S.day
        let past = now - S.t0 - S.day
        let changes = [
            try S.change(S.transaction("t1", original: "active", expires: ahead, signed: 1)),
            try S.change(S.transaction("t2", original: "expired", expires: past, signed: 1)),
            try S.change(S.transaction("t3", original: "refunded", expires: ahead, signed: 2, revoked: 1)),
            try S.change(S.transaction("t4", original: "refundedOver", expires: past, signed: 2, revoked: 1)),
            try S.change(
                S.transaction("t5", original: "grace", expires: past, signed: 1),
                S.renewal(original: "grace", inBillingRetry: true, graceEnds: ahead, signed: 1)),
            try S.change(
                S.transaction("t6", original: "unmapped", product: "reader.yearly", expires: ahead, signed: 1)),
            try S.change(S.transaction("t7", original: "otherActive", expires: ahead, signed: 1, bundle: other)),
            try S.change(
                S.transaction("t8", original: "otherRefunded", expires: ahead, signed: 2, revoked: 1, bundle: other)),
        ]
        _ = try await store.apply(changes, projectedThrough: nil)
    }

    /// The view agrees with the reducer (`state(at:policy:)`, what GetSubscription answers) for every record,
    /// under `policies` by bundle id (a bundle id without one: `.defaults`).
    static func expectAgreement(
        _ view: [String: Row], store: PostgresSubscriptionStore, policies: [String: SubscriptionPolicy], now: Int64
    ) async throws {
        let bundles = [
            S.bundleId: ["active", "expired", "refunded", "refundedOver", "grace", "unmapped"],
            other: ["otherActive", "otherRefunded"],
        ]
        for (bundle, originals) in bundles {
            for original in originals {
                let record = try #require(try await store.record(S.key(original, bundle: bundle)))
                let state = record.state(at: now, policy: policies[bundle] ?? .defaults)
                #expect(view[original]?.status == Int64(state.status.rawValue), "\(original)")
                #expect(view[original]?.entitled == state.entitled, "\(original)")
                #expect(
                    view[original]?.entitlements == "{" + state.entitlements.joined(separator: ",") + "}",
                    "\(original)")
            }
        }
    }

    @Test func theViewGrantsWhatThePublishedPolicyGrants() async throws {
        let fixture = try await PostgresStoreFixture()
        let store = try await PostgresSubscriptionStore(fixture.database)
        let pool = fixture.database.pool
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.apply(to: store, now: now)

        // Nothing published: every bundle id `immediate`, no product unlocks a name.
        var view = try await Self.view(pool)
        #expect(view["active"] == Row(status: 1, entitled: true, entitlements: "{}"))
        #expect(view["refunded"] == Row(status: 5, entitled: false, entitlements: "{}"))
        try await Self.expectAgreement(view, store: store, policies: [:], now: now)

        // `immediate`; the product unlocks two names (listed sorted), another product one of them.
        var policy = SubscriptionPolicy(
            refundPolicy: .immediate,
            entitlements: ["pro": ["reader.monthly"], "all": ["reader.monthly", "reader.lifetime"]])
        try await store.publish(policies: [S.bundleId: policy])
        view = try await Self.view(pool)
        #expect(view["active"] == Row(status: 1, entitled: true, entitlements: "{all,pro}"))
        #expect(view["expired"] == Row(status: 2, entitled: false, entitlements: "{}"))
        #expect(view["refunded"] == Row(status: 5, entitled: false, entitlements: "{}"))
        #expect(view["refundedOver"] == Row(status: 5, entitled: false, entitlements: "{}"))
        #expect(view["grace"] == Row(status: 4, entitled: true, entitlements: "{all,pro}"))
        #expect(view["unmapped"] == Row(status: 1, entitled: true, entitlements: "{}"))
        // Another bundle id's product of the same id unlocks nothing: the mapping is per bundle id.
        #expect(view["otherActive"] == Row(status: 1, entitled: true, entitlements: "{}"))
        #expect(view["otherRefunded"] == Row(status: 5, entitled: false, entitlements: "{}"))
        try await Self.expectAgreement(view, store: store, policies: [S.bundleId: policy], now: now)
        // The query docs/subscription-state.md shows analysts.
        let pro = try await pool.query(
            "SELECT bundle_id, count(*) FILTER (WHERE 'pro' = ANY(entitlements)) AS pro FROM subscription_state "
                + "WHERE environment = 'Sandbox' AND entitled GROUP BY bundle_id ORDER BY bundle_id")
        #expect(try pro.map { try [$0[0].string(), $0[1].string()] } == [[Self.other, "0"], [S.bundleId, "2"]])

        // Published again: `untilExpiry` and another mapping replace the first whole.
        policy = SubscriptionPolicy(refundPolicy: .untilExpiry, entitlements: ["basic": ["reader.monthly"]])
        try await store.publish(policies: [S.bundleId: policy])
        view = try await Self.view(pool)
        #expect(view["active"] == Row(status: 1, entitled: true, entitlements: "{basic}"))
        #expect(view["refunded"] == Row(status: 5, entitled: true, entitlements: "{basic}"))
        #expect(view["refundedOver"] == Row(status: 5, entitled: false, entitlements: "{}"))
        #expect(view["otherRefunded"] == Row(status: 5, entitled: false, entitlements: "{}"))
        try await Self.expectAgreement(view, store: store, policies: [S.bundleId: policy], now: now)

        // A publication of another bundle id leaves this one's rows; a policy without entitlements is a refund
        // policy alone.
        let otherPolicy = SubscriptionPolicy(refundPolicy: .untilExpiry)
        try await store.publish(policies: [Self.other: otherPolicy])
        view = try await Self.view(pool)
        #expect(view["active"] == Row(status: 1, entitled: true, entitlements: "{basic}"))
        #expect(view["otherRefunded"] == Row(status: 5, entitled: true, entitlements: "{}"))
        try await Self.expectAgreement(
            view, store: store, policies: [S.bundleId: policy, Self.other: otherPolicy], now: now)
        let published = try await pool.query(
            "SELECT bundle_id, refund_policy FROM subscription_policies ORDER BY bundle_id")
        #expect(
            try published.map { try [$0[0].string(), $0[1].string()] } == [
                [Self.other, "untilExpiry"], [S.bundleId, "untilExpiry"],
            ])
        let mapped = try await pool.query(
            "SELECT bundle_id, product_id, entitlement FROM subscription_entitlement_products")
        #expect(
            try mapped.map { try [$0[0].string(), $0[1].string(), $0[2].string()] } == [
                [S.bundleId, "reader.monthly", "basic"]
            ])
    }

    /// Existing columns keep their names and order; the new ones come last, with their types.
    @Test func theNewColumnsComeAfterTheExistingOnes() async throws {
        let fixture = try await PostgresStoreFixture()
        let rows = try await fixture.database.pool.query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns "
                + "WHERE table_name = 'subscription_state' ORDER BY ordinal_position")
        let columns = try rows.map { try $0[0].string() ?? "" }
        #expect(
            columns == [
                "bundle_id", "environment", "original_transaction_id", "product_id", "subscription_group_identifier",
                "status", "expires_date", "expires_at", "grace_period_expires_date", "grace_period_expires_at",
                "auto_renew", "auto_renew_product_id", "in_billing_retry", "revocation_date", "revocation_at",
                "ownership_type", "app_account_token", "current_transaction_id", "transaction_signed_date",
                "renewal_signed_date", "version", "updated_at", "updated_at_utc", "source", "status_name", "entitled",
                "entitlements",
            ])
        #expect(try rows.suffix(2).map { try $0[1].string() } == ["boolean", "ARRAY"])
    }

    /// A role granted SELECT on the view alone reads the entitlement columns, never the policy tables.
    @Test func theAnalystsRoleReadsTheColumnsButNotThePolicyTables() async throws {
        let fixture = try await PostgresStoreFixture()
        let store = try await PostgresSubscriptionStore(fixture.database)
        let pool = fixture.database.pool
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.apply(to: store, now: now)
        try await store.publish(policies: [S.bundleId: SubscriptionPolicy(entitlements: ["pro": ["reader.monthly"]])])
        // The role's name is made here (an identifier cannot be a parameter); roles are the server's.
        let role = "analyst_" + String(UInt64.random(in: 1...UInt64.max), radix: 36)
        _ = try await pool.query("CREATE ROLE \(role) NOLOGIN")
        _ = try await pool.query("GRANT USAGE ON SCHEMA public TO \(role)")
        _ = try await pool.query("GRANT SELECT ON subscription_state TO \(role)")
        let granted = try await pool.transaction { transaction in
            _ = try await transaction.query("SET LOCAL ROLE \(role)")
            return try await transaction.query(
                "SELECT entitlements::text FROM subscription_state WHERE original_transaction_id = 'active'")[0][0]
                .string()
        }
        #expect(granted == "{pro}")
        for table in ["subscription_policies", "subscription_entitlement_products"] {
            await #expect(throws: PostgresError.self) {
                try await pool.transaction { transaction in
                    _ = try await transaction.query("SET LOCAL ROLE \(role)")
                    _ = try await transaction.query("SELECT count(*) FROM \(table)")
                }
            }
        }
        _ = try await pool.query("DROP OWNED BY \(role)")
        _ = try await pool.query("DROP ROLE \(role)")
    }

    /// Replicas publishing at once (a rolling start) never fail on each other's rows: each publication is whole,
    /// and the last one is what the view uses.
    @Test func replicasPublishingAtOnceLeaveOnePublicationWhole() async throws {
        await PostgresTestConnections.shared.acquire(3)
        defer { PostgresTestConnections.shared.release(3) }
        let databases = try await TestDatabases()
        do {
            try await Self.publishAtOnce(databases)
        } catch {
            await databases.close()
            throw error
        }
        await databases.close()
    }

    /// Three replicas of `databases` publish ten times each at once, a different policy every time.
    private static func publishAtOnce(_ databases: TestDatabases) async throws {
        var replicas: [PostgresDatabase] = []
        var stores: [PostgresSubscriptionStore] = []
        for _ in 0..<3 {
            replicas.append(try await databases.open())
            stores.append(try await PostgresSubscriptionStore(replicas[replicas.count - 1]))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    for round in 0..<10 {
                        let name = "r\(index)"
                        let products = Set((0...round).map { "p\($0)" })
                        try await store.publish(policies: [
                            S.bundleId: SubscriptionPolicy(
                                refundPolicy: index.isMultiple(of: 2) ? .immediate : .untilExpiry,
                                entitlements: [name: products, name + "x": products]),
                            Self.other: SubscriptionPolicy(entitlements: [name: ["p0"]]),
                        ])
                    }
                }
            }
            try await group.waitForAll()
        }
        // Each replica's last publication maps 10 products under two names: the rows are one of them, whole.
        let pool = replicas[0].pool
        let rows = try await pool.query(
            "SELECT p.refund_policy, count(*), count(DISTINCT e.entitlement), min(e.entitlement) "
                + "FROM subscription_policies AS p JOIN subscription_entitlement_products AS e USING (bundle_id) "
                + "WHERE p.bundle_id = $1 GROUP BY p.refund_policy", [.text(S.bundleId)])
        #expect(rows.count == 1)
        #expect(try rows.first?[1].int() == 20)
        #expect(try rows.first?[2].int() == 2)
        let index = Int(try rows.first?[3].string()?.dropFirst() ?? "") ?? -1
        #expect(try rows.first?[0].string() == (index.isMultiple(of: 2) ? "immediate" : "untilExpiry"))
        let others = try await pool.query(
            "SELECT count(*) FROM subscription_entitlement_products WHERE bundle_id = $1", [.text(Self.other)])
        #expect(try others[0][0].int() == 1)
    }
}
