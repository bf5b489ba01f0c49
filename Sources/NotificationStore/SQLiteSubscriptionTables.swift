import ProtoCodec
import SubscriptionState

/// The subscription state's rows on one connection (`SQLiteSubscriptionSchema`): records loaded with their
/// ledgers, purchases, the projection position. Every statement is prepared once per connection; what comes
/// back from disk is checked against `limits` and decoded from the protobuf payloads, and a row that does not
/// decode fails the call (`.corrupt`), never the process.
struct SQLiteSubscriptionTables {
    let database: SQLiteDatabase
    let limits: SubscriptionStoreLimits

    private static let recordColumns = "version, updated_at, source, renewal_jws, renewal_payload"
    private static let ledgerColumns = "transaction_id, jws, payload"

    /// The record of `key`, or nil; run inside a transaction, so the record and its ledger are one snapshot.
    func record(_ key: SubscriptionKey) throws(NotificationStoreFailure) -> SubscriptionRecord? {
        var found: RecordBookkeeping?
        try database.query(
            "SELECT \(Self.recordColumns) FROM subscription_records "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
            bind: Self.bind(key)
        ) { row throws(NotificationStoreFailure) in
            found = try bookkeeping(row, from: 0, of: key.originalTransactionId)
            return false
        }
        guard let found else { return nil }
        var transactions: [SignedTransaction] = []
        try database.query(
            "SELECT \(Self.ledgerColumns) FROM subscription_transactions "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3 LIMIT ?4",
            bind: Self.bind(key) + [.integer(Int64(limits.transactionsPerRead) + 1)]
        ) { row throws(NotificationStoreFailure) in
            transactions.append(try ledgerEntry(row, from: 0, of: key.originalTransactionId))
            return try withinLedgerLimit(transactions.count, "the record \(key.originalTransactionId)")
        }
        return try found.record(key, transactions: transactions)
    }

    /// The record of `key` with its current transaction only (the record row names it, as the reducer chose it at
    /// the last write: one point lookup in the ledger), or nil; inside a transaction. A record whose row names no
    /// transaction, or one the ledger lacks, is read whole.
    func currentRecord(_ key: SubscriptionKey) throws(NotificationStoreFailure) -> SubscriptionRecord? {
        guard case .record(let record, _) = try currentRecord(key, unlessStamped: nil) else { return nil }
        return record
    }

    /// `currentRecord(key)` unless the row still has `stamp`: then `.unchanged`, having read the row's small columns
    /// only (not the renewal info's JWS and payload, which SQLite keeps on overflow pages, nor the ledger row). One
    /// query of the record row either way.
    func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?) throws(NotificationStoreFailure)
        -> CurrentRead
    {
        var found: (stamp: RecordStamp, bookkeeping: RecordBookkeeping?)?
        try database.query(
            "SELECT current_transaction_id, \(Self.recordColumns) FROM subscription_records "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
            bind: Self.bind(key)
        ) { row throws(NotificationStoreFailure) in
            // An id past the snapshot bound is no id this gateway wrote: the record is read whole.
            let read = RecordStamp(
                version: UInt64(bitPattern: row.integer(1)), updatedAtMillis: row.integer(2),
                currentTransactionId: row.text(0, limit: limits.snapshotBytes) ?? "")
            // SQLite reads a column's bytes when asked for them: an unchanged record's renewal info (on overflow
            // pages) is never read.
            found = (read, read == stamp ? nil : try bookkeeping(row, from: 1, of: key.originalTransactionId))
            return false
        }
        guard let found else { return .missing }
        guard let bookkeeping = found.bookkeeping else { return .unchanged }
        let stampFound = found.stamp
        var current: SignedTransaction?
        if !stampFound.currentTransactionId.isEmpty {
            try database.query(
                "SELECT \(Self.ledgerColumns) FROM subscription_transactions WHERE bundle_id = ?1 AND environment = ?2 "
                    + "AND original_transaction_id = ?3 AND transaction_id = ?4",
                bind: Self.bind(key) + [.text(stampFound.currentTransactionId)]
            ) { row throws(NotificationStoreFailure) in
                current = try ledgerEntry(row, from: 0, of: key.originalTransactionId)
                return false
            }
        }
        guard let current else {
            guard let whole = try record(key) else { return .missing }
            return .record(whole, stampFound)
        }
        return .record(try bookkeeping.record(key, transactions: [current]), stampFound)
    }

    /// The records of a customer's token, ordered by original transaction id; inside a transaction. The token
    /// index is named (`INDEXED BY`): without statistics the planner would rather walk the primary key in order.
    func records(bundleId: String, environment: Environment, appAccountToken: String)
        throws(NotificationStoreFailure) -> [SubscriptionRecord]
    {
        let bind: [SQLiteDatabase.Value] = [
            .text(bundleId), .text(AppleNames.environment(environment)), .text(appAccountToken),
        ]
        var found: [(String, RecordBookkeeping)] = []
        try database.query(
            "SELECT original_transaction_id, \(Self.recordColumns) FROM subscription_records "
                + "INDEXED BY subscription_records_customer "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND app_account_token = ?3 AND app_account_token <> '' "
                + "LIMIT ?4",
            bind: bind + [.integer(Int64(limits.recordsPerCustomer) + 1)]
        ) { row throws(NotificationStoreFailure) in
            let original = row.text(0)
            let kept = try bookkeeping(row, from: 1, of: original)
            found.append((original, kept))
            guard found.count <= limits.recordsPerCustomer else {
                throw NotificationStoreFailure(
                    "subscription store: the customer has more than \(limits.recordsPerCustomer) subscriptions",
                    kind: .limitExceeded)
            }
            return true
        }
        if found.isEmpty { return [] }
        var ledgers: [String: [SignedTransaction]] = [:]
        var count = 0
        try database.query(
            "SELECT t.original_transaction_id, t.transaction_id, t.jws, t.payload "
                + "FROM subscription_records AS r INDEXED BY subscription_records_customer "
                + "CROSS JOIN subscription_transactions AS t "
                + "ON t.bundle_id = r.bundle_id AND t.environment = r.environment "
                + "AND t.original_transaction_id = r.original_transaction_id "
                + "WHERE r.bundle_id = ?1 AND r.environment = ?2 AND r.app_account_token = ?3 "
                + "AND r.app_account_token <> '' LIMIT ?4",
            bind: bind + [.integer(Int64(limits.transactionsPerRead) + 1)]
        ) { row throws(NotificationStoreFailure) in
            let original = row.text(0)
            ledgers[original, default: []].append(try ledgerEntry(row, from: 1, of: original))
            count += 1
            return try withinLedgerLimit(count, "the customer's records")
        }
        var records: [SubscriptionRecord] = []
        for (original, bookkeeping) in found.sorted(by: { $0.0 < $1.0 }) {
            let key = SubscriptionKey(bundleId: bundleId, environment: environment, originalTransactionId: original)
            records.append(try bookkeeping.record(key, transactions: ledgers[original] ?? []))
        }
        return records
    }

    /// Writes what `outcome` changed of its record: the filed ledger row and the record's row.
    func write(_ outcome: SubscriptionFold.RecordOutcome) throws(NotificationStoreFailure) {
        let record = outcome.record
        let key = Self.bind(record.key)
        if let filed = outcome.filedTransaction {
            try database.query(
                "INSERT OR REPLACE INTO subscription_transactions(bundle_id, environment, original_transaction_id, "
                    + "transaction_id, signed_date, jws, payload) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                bind: key + [
                    .text(filed.payload.transactionId), .integer(filed.signedDateMillis), .text(filed.jws),
                    .blob(filed.payload.serializedBytes()),
                ]
            ) { _ in false }
        }
        let facts = SubscriptionFold.facts(of: record)
        let transaction = facts.transaction?.payload
        var columns: [SQLiteDatabase.Value] =
            key + [
                .integer(Int64(bitPattern: record.version)), .integer(record.updatedAtMillis),
                .text(record.source?.rawValue ?? ""), .text(transaction?.transactionId ?? ""),
                .text(facts.appAccountToken), .text(facts.productId), .text(facts.subscriptionGroupIdentifier),
                .text(transaction.map(AppleNames.ownership) ?? ""), .integer(facts.expiresDateMillis),
                .integer(facts.revocationDateMillis), .integer(facts.transactionSignedDateMillis),
                .integer(facts.autoRenew ? 1 : 0), .text(facts.autoRenewProductId),
                .integer(facts.inBillingRetry ? 1 : 0), .integer(facts.gracePeriodExpiresDateMillis),
                .integer(facts.renewalSignedDateMillis),
            ]
        if outcome.renewalChanged || outcome.isNew {
            columns += [
                record.renewalInfo.map { .text($0.jws) } ?? .null,
                record.renewalInfo.map { .blob($0.payload.serializedBytes()) } ?? .null,
            ]
            try database.query(
                "INSERT OR REPLACE INTO subscription_records(bundle_id, environment, original_transaction_id, "
                    + "version, updated_at, source, current_transaction_id, app_account_token, product_id, "
                    + "subscription_group_identifier, ownership_type, expires_date, revocation_date, "
                    + "transaction_signed_date, auto_renew, auto_renew_product_id, in_billing_retry, "
                    + "grace_period_expires_date, renewal_signed_date, renewal_jws, renewal_payload) "
                    + "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
                    + "?20, ?21)",
                bind: columns
            ) { _ in false }
        } else {
            // The renewal info is as stored: its (large) columns are left alone.
            try database.query(
                "UPDATE subscription_records SET version = ?4, updated_at = ?5, source = ?6, "
                    + "current_transaction_id = ?7, app_account_token = ?8, product_id = ?9, "
                    + "subscription_group_identifier = ?10, ownership_type = ?11, expires_date = ?12, "
                    + "revocation_date = ?13, transaction_signed_date = ?14, auto_renew = ?15, "
                    + "auto_renew_product_id = ?16, in_billing_retry = ?17, grace_period_expires_date = ?18, "
                    + "renewal_signed_date = ?19 "
                    + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
                bind: columns
            ) { _ in false }
            guard database.changes == 1 else {
                throw NotificationStoreFailure(
                    "subscription store: the record \(record.key.originalTransactionId) vanished while applying",
                    kind: .corrupt)
            }
        }
    }

    /// Number of records.
    func recordCount() throws(NotificationStoreFailure) -> Int {
        var count: Int64 = 0
        try database.query("SELECT count(*) FROM subscription_records", bind: []) {
            count = $0.integer(0)
            return false
        }
        return Int(clamping: count)
    }
}
