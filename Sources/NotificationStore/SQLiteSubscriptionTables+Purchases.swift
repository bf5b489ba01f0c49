import ProtoCodec
import SubscriptionState

/// One-time purchases, the projection position, and forgetting everything.
extension SQLiteSubscriptionTables {
    static let purchaseColumns = "transaction_id, jws, payload"

    /// The purchase `transactionId` of an app and environment, or nil.
    func purchase(bundleId: String, environment: Environment, transactionId: String)
        throws(NotificationStoreFailure) -> SignedTransaction?
    {
        var found: SignedTransaction?
        try database.query(
            "SELECT \(Self.purchaseColumns) FROM subscription_purchases "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND transaction_id = ?3",
            bind: [.text(bundleId), .text(AppleNames.environment(environment)), .text(transactionId)]
        ) { row throws(NotificationStoreFailure) in
            found = try purchase(row, bundleId: bundleId, environment: environment)
            return false
        }
        return found
    }

    /// The purchases of an app and environment whose `column` is `value` (a non-empty token or original
    /// transaction id), at most `limits.purchasesPerCustomer`.
    func purchases(bundleId: String, environment: Environment, where column: PurchaseColumn, is value: String)
        throws(NotificationStoreFailure) -> [SignedTransaction]
    {
        var found: [SignedTransaction] = []
        try database.query(
            "SELECT \(Self.purchaseColumns) FROM subscription_purchases INDEXED BY \(column.index) "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND \(column.rawValue) = ?3 AND \(column.rawValue) <> '' "
                + "LIMIT ?4",
            bind: [
                .text(bundleId), .text(AppleNames.environment(environment)), .text(value),
                .integer(Int64(limits.purchasesPerCustomer) + 1),
            ]
        ) { row throws(NotificationStoreFailure) in
            found.append(try purchase(row, bundleId: bundleId, environment: environment))
            guard found.count <= limits.purchasesPerCustomer else {
                throw NotificationStoreFailure(
                    "subscription store: the customer has more than \(limits.purchasesPerCustomer) purchases",
                    kind: .limitExceeded)
            }
            return true
        }
        return found
    }

    /// The purchases after `key` (nil: from the first) in key order (the primary key's: text compares as bytes),
    /// at most `limit`, with the bookkeeping of their last change.
    func purchases(after key: PurchaseKey?, limit: Int) throws(NotificationStoreFailure) -> [StoredPurchase] {
        var found: [StoredPurchase] = []
        let start: [SQLiteDatabase.Value] =
            key.map { [.text($0.bundleId), .text(AppleNames.environment($0.environment)), .text($0.transactionId)] }
            ?? [.text(""), .text(""), .text("")]
        try database.query(
            "SELECT \(Self.purchaseColumns), bundle_id, environment, updated_at, source FROM subscription_purchases "
                + "WHERE (bundle_id, environment, transaction_id) > (?1, ?2, ?3) "
                + "ORDER BY bundle_id, environment, transaction_id LIMIT ?4",
            bind: start + [.integer(Int64(max(0, limit)))]
        ) { row throws(NotificationStoreFailure) in
            let id = row.text(0).prefix(40)
            let environmentName = row.text(4)
            guard let environment = AppleNames.environment(named: environmentName) else {
                throw corrupt("the purchase row \(id) names an unknown environment '\(environmentName.prefix(40))'")
            }
            let sourceName = row.text(6)
            guard let source = SnapshotSource(rawValue: sourceName) else {
                throw corrupt("the purchase row \(id) names an unknown source '\(sourceName.prefix(40))'")
            }
            let purchase = try purchase(row, bundleId: row.text(3), environment: environment)
            found.append(StoredPurchase(purchase: purchase, updatedAtMillis: row.integer(5), source: source))
            return true
        }
        return found
    }

    /// The columns purchases are found by.
    enum PurchaseColumn: String {
        case appAccountToken = "app_account_token"
        case originalTransactionId = "original_transaction_id"

        /// The index that finds them.
        var index: String {
            switch self {
            case .appAccountToken: "subscription_purchases_customer"
            case .originalTransactionId: "subscription_purchases_original"
            }
        }
    }

    /// Keeps `purchase` (newer than the one stored) in `source`'s change at `nowMillis`.
    func write(purchase: SignedTransaction, source: SnapshotSource, nowMillis: Int64) throws(NotificationStoreFailure) {
        let payload = purchase.payload
        try database.query(
            "INSERT OR REPLACE INTO subscription_purchases(bundle_id, environment, transaction_id, "
                + "original_transaction_id, product_id, product_type, app_account_token, purchase_date, "
                + "revocation_date, signed_date, updated_at, source, jws, payload) "
                + "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            bind: [
                .text(payload.bundleId), .text(AppleNames.environment(payload.environment)),
                .text(payload.transactionId), .text(payload.originalTransactionId), .text(payload.productId),
                .text(AppleNames.productType(payload)), .text(payload.appAccountToken),
                .integer(AppleNames.millis(payload.purchaseDate, exact: payload.purchaseDateMillis)),
                .integer(AppleNames.millis(payload.revocationDate, exact: payload.revocationDateMillis)),
                .integer(purchase.signedDateMillis), .integer(nowMillis), .text(source.rawValue), .text(purchase.jws),
                .blob(payload.serializedBytes()),
            ]
        ) { _ in false }
    }

    // MARK: Projection position

    /// The position the state includes.
    func projectedThrough() throws(NotificationStoreFailure) -> StorePosition {
        var position = StorePosition.zero
        try database.query("SELECT projected_major, projected_minor FROM state_progress WHERE id = 1", bind: []) {
            position = StorePosition(major: UInt64(bitPattern: $0.integer(0)), minor: UInt64(bitPattern: $0.integer(1)))
            return false
        }
        return position
    }

    /// Sets the position the state includes.
    func setProjectedThrough(_ position: StorePosition) throws(NotificationStoreFailure) {
        try database.query(
            "UPDATE state_progress SET projected_major = ?1, projected_minor = ?2 WHERE id = 1",
            bind: [.integer(Int64(bitPattern: position.major)), .integer(Int64(bitPattern: position.minor))]
        ) { _ in false }
    }

    /// Deletes every record, ledger row and purchase, and the position.
    func removeAll() throws(NotificationStoreFailure) {
        try database.execute(
            "DELETE FROM subscription_transactions; DELETE FROM subscription_records; DELETE FROM subscription_purchases;"
        )
        try setProjectedThrough(.zero)
    }
}
