import Postgres
import SubscriptionState

/// The configured policies in the database (`PostgresSchema.entitlements`), for the analysts' view: each replica
/// publishes its configuration at start.
extension PostgresSubscriptionStore {
    /// The transaction-scoped advisory lock every publication takes first, so two replicas' publications run one
    /// after the other: the later replaces what the earlier wrote (two interleaved would both delete, then both
    /// insert the same keys).
    static let policiesLockKey = lockKey(["subscription_policies"])

    /// Rows per INSERT (at most 3 parameters each, well under the protocol's 65,535).
    static let policyRowsPerInsert = 1_000

    /// Publishes `policies` (bundle id → the policy its app is configured with): each bundle id's refund policy and
    /// the products that unlock each of its entitlements replace what was published for it, in one transaction
    /// under `policiesLockKey`; the rows of bundle ids not in `policies` stay. The last publication of a bundle id
    /// wins. Fails `.unavailable` when the server cannot be reached (nothing is then changed).
    package func publish(policies: [String: SubscriptionPolicy]) async throws(NotificationStoreFailure) {
        if policies.isEmpty { return }
        let bundleIds = policies.keys.sorted()
        var products: [[PostgresValue?]] = []
        for bundleId in bundleIds {
            let entitlements = policies[bundleId]?.entitlements ?? [:]
            for name in entitlements.keys.sorted() {
                for product in (entitlements[name] ?? []).sorted() {
                    products.append([.text(bundleId), .text(product), .text(name)])
                }
            }
        }
        var queries = [PostgresQuery("SELECT pg_advisory_xact_lock($1)", [.integer(Self.policiesLockKey)])]
        for table in ["subscription_entitlement_products", "subscription_policies"] {
            queries += Self.statements(
                "DELETE FROM \(table) WHERE bundle_id IN", bundleIds.map { [.text($0)] }, grouped: false)
        }
        queries += Self.statements(
            "INSERT INTO subscription_policies(bundle_id, refund_policy) VALUES",
            bundleIds.map { [.text($0), .text((policies[$0] ?? .defaults).refundPolicy.rawValue)] }, grouped: true)
        queries += Self.statements(
            "INSERT INTO subscription_entitlement_products(bundle_id, product_id, entitlement) VALUES", products,
            grouped: true)
        do {
            _ = try await database.pool.transaction(queries)
        } catch {
            throw NotificationStoreFailure(error, while: "publishing the subscription policies")
        }
    }

    /// `head` followed by numbered placeholders for `rows`, `policyRowsPerInsert` rows a statement: each row
    /// parenthesized (`grouped`: `VALUES ($1, $2), ($3, $4)`), or every row's one value in one list
    /// (`IN ($1, $2)`). The values travel as parameters, never in the statement's text.
    private static func statements(_ head: String, _ rows: [[PostgresValue?]], grouped: Bool) -> [PostgresQuery] {
        var queries: [PostgresQuery] = []
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + policyRowsPerInsert, rows.count)]
            var lists: [String] = []
            var parameters: [PostgresValue?] = []
            for row in chunk {
                lists.append(placeholders(from: parameters.count + 1, count: row.count))
                parameters += row
            }
            let values =
                grouped
                ? lists.map { "(" + $0 + ")" }.joined(separator: ", ") : "(" + lists.joined(separator: ", ") + ")"
            queries.append(PostgresQuery(head + " " + values, parameters))
            start += chunk.count
        }
        return queries
    }
}
