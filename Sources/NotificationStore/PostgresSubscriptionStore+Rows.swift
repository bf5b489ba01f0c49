import Postgres
import ProtoCodec
import SubscriptionState

/// Reading rows back: every cell is bounded and checked before it becomes a value, and one that is not what
/// was written fails the call `.corrupt`, never the process.
extension PostgresSubscriptionStore {
    // MARK: One-statement reads

    /// A read's rows are parts of one `UNION ALL` (one statement, so one snapshot): `part` 0 a record's row
    /// (`id` its original transaction id), 1 a ledger row (`sub` its transaction id), 2 a purchase (`sub` its
    /// transaction id); `jws` and `payload` the snapshot (a record's renewal info).
    static let recordPart = """
        (SELECT 0 AS part, original_transaction_id AS id, NULL::text AS sub, version, updated_at, source,
          renewal_jws AS jws, renewal_payload AS payload
        FROM subscription_records WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3)
        """

    /// The ledger of the record `$1`-`$3`, at most `$4` rows.
    static let ledgerPart = """
        (SELECT 1, original_transaction_id, transaction_id, NULL, NULL, NULL, jws, payload
        FROM subscription_transactions WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3
        LIMIT $4)
        """

    /// The stamps (version, update time, current transaction id) of the records `$3` (a `text[]`) of `$1`-`$2`:
    /// one statement for every stamped read issued in one pass of a loop (`PostgresPool.lookup`). Each key is a
    /// `LATERAL` lookup of its own (its `LIMIT 1` keeps the planner from folding it into a join), so each costs one
    /// descent of the primary key whatever the planner guesses about the table (`= ANY($3)`, or a join with
    /// `unnest`, was planned as a scan of every record of the app).
    static let recordStamps = """
        SELECT r.original_transaction_id, r.version, r.updated_at, r.current_transaction_id
        FROM unnest($3::text[]) AS k(id), LATERAL (
          SELECT original_transaction_id, version, updated_at, current_transaction_id FROM subscription_records
          WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = k.id LIMIT 1) AS r
        """

    /// The records `$3` (a `text[]`) of `$1`-`$2` as `recordPart` has them, each with its current transaction id
    /// in `sub`, and the ledger row each names as current: one statement for every read issued in one pass of a
    /// loop (so each record's rows are one snapshot); per key, two probes of the records' primary key (one per
    /// branch) and one of the ledger's.
    static let currentRecords = """
        SELECT 0 AS part, r.original_transaction_id AS id, r.current_transaction_id AS sub, r.version, r.updated_at,
          r.source, r.renewal_jws AS jws, r.renewal_payload AS payload
        FROM unnest($3::text[]) AS k(id), LATERAL (
          SELECT original_transaction_id, current_transaction_id, version, updated_at, source, renewal_jws,
            renewal_payload
          FROM subscription_records
          WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = k.id LIMIT 1) AS r
        UNION ALL
        SELECT 1, t.original_transaction_id, t.transaction_id, NULL, NULL, NULL, t.jws, t.payload
        FROM unnest($3::text[]) AS k(id), LATERAL (
          SELECT current_transaction_id FROM subscription_records
          WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = k.id LIMIT 1) AS r, LATERAL (
          SELECT original_transaction_id, transaction_id, jws, payload FROM subscription_transactions
          WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = k.id
            AND transaction_id = r.current_transaction_id LIMIT 1) AS t
        """

    /// The purchases of the original transaction id `$3`, at most `$5`.
    static let originalPurchasesPart = """
        (SELECT 2, original_transaction_id, transaction_id, NULL, NULL, NULL, jws, payload
        FROM subscription_purchases WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3
        LIMIT $5)
        """

    /// The records (at most `$4`), their ledgers (at most `$5` rows together) and the purchases (at most `$6`)
    /// of the token `$3`.
    static let customerParts = """
        (SELECT 0 AS part, original_transaction_id AS id, NULL::text AS sub, version, updated_at, source,
          renewal_jws AS jws, renewal_payload AS payload
        FROM subscription_records
        WHERE bundle_id = $1 AND environment = $2 AND app_account_token = $3 AND app_account_token <> '' LIMIT $4)
        UNION ALL
        (SELECT 1, t.original_transaction_id, t.transaction_id, NULL, NULL, NULL, t.jws, t.payload
        FROM subscription_records AS r JOIN subscription_transactions AS t
          ON t.bundle_id = r.bundle_id AND t.environment = r.environment
          AND t.original_transaction_id = r.original_transaction_id
        WHERE r.bundle_id = $1 AND r.environment = $2 AND r.app_account_token = $3 AND r.app_account_token <> ''
        LIMIT $5)
        UNION ALL
        (SELECT 2, original_transaction_id, transaction_id, NULL, NULL, NULL, jws, payload
        FROM subscription_purchases
        WHERE bundle_id = $1 AND environment = $2 AND app_account_token = $3 AND app_account_token <> '' LIMIT $6)
        """

    /// What one read found, decoded and within the limits.
    struct Parts {
        var records: [(original: String, bookkeeping: RecordBookkeeping)] = []
        var ledgers: [String: [SignedTransaction]] = [:]
        var purchases: [SignedTransaction] = []
        let store: PostgresSubscriptionStore

        /// The records with their ledgers, ordered by original transaction id.
        func records(_ bundleId: String, _ environment: Environment) throws(NotificationStoreFailure)
            -> [SubscriptionRecord]
        {
            var restored: [SubscriptionRecord] = []
            for (original, bookkeeping) in records.sorted(by: { $0.original < $1.original }) {
                let key = SubscriptionKey(bundleId: bundleId, environment: environment, originalTransactionId: original)
                restored.append(try bookkeeping.record(key, transactions: ledgers[original] ?? []))
            }
            return restored
        }

        /// The purchases, each checked against the app and environment it was read for.
        func purchases(_ bundleId: String, _ environment: Environment) throws(NotificationStoreFailure)
            -> [SignedTransaction]
        {
            for purchase in purchases {
                guard purchase.payload.bundleId == bundleId, purchase.payload.environment == environment else {
                    throw PostgresSubscriptionStore.corrupt(
                        "the purchase row \(purchase.payload.transactionId.prefix(40)) holds another transaction")
                }
            }
            return purchases
        }
    }

    /// Decodes a read's parts, failing past the limits as the SQLite store does.
    func parts(_ rows: some Sequence<PostgresRow>, of holder: String) throws(NotificationStoreFailure) -> Parts {
        var parts = Parts(store: self)
        var ledgerRows = 0
        for row in rows {
            let original = try Self.text(row[1], "a row's original transaction id")
            switch try Self.integer(row[0], "a row's part") {
            case 0:
                parts.records.append((original, try bookkeeping(row, from: 3, of: original)))
                guard parts.records.count <= limits.recordsPerCustomer else {
                    throw NotificationStoreFailure(
                        "subscription store: the customer has more than \(limits.recordsPerCustomer) subscriptions",
                        kind: .limitExceeded)
                }
            case 1:
                ledgerRows += 1
                try withinLedgerLimit(ledgerRows, holder)
                parts.ledgers[original, default: []].append(try ledgerEntry(row, from: 2, jws: 6, of: original))
            default:
                let id = try Self.text(row[2], "a purchase's transaction id")
                let purchase: SignedTransaction = try snapshot(row[6], row[7], what: "purchase \(id.prefix(40))")
                guard purchase.payload.transactionId == id else {
                    throw Self.corrupt("the purchase row \(id.prefix(40)) holds another transaction")
                }
                parts.purchases.append(purchase)
                guard parts.purchases.count <= limits.purchasesPerCustomer else {
                    throw NotificationStoreFailure(
                        "subscription store: the customer has more than \(limits.purchasesPerCustomer) purchases",
                        kind: .limitExceeded)
                }
            }
        }
        return parts
    }

    // MARK: Rows

    /// A record's bookkeeping from column `first` on: version, updated_at, source, renewal JWS and payload.
    func bookkeeping(_ row: PostgresRow, from first: Int, of original: String) throws(NotificationStoreFailure)
        -> RecordBookkeeping
    {
        let what = "the record \(original.prefix(40))"
        let sourceName = try Self.text(row[first + 2], "the source of \(what)")
        guard let source = SnapshotSource(rawValue: sourceName) else {
            throw Self.corrupt("\(what) names an unknown source '\(sourceName.prefix(40))'")
        }
        let renewalInfo: SignedRenewalInfo? =
            row[first + 3].isNull && row[first + 4].isNull
            ? nil : try snapshot(row[first + 3], row[first + 4], what: "renewal info of \(original.prefix(40))")
        return RecordBookkeeping(
            version: UInt64(bitPattern: try Self.integer(row[first], "the version of \(what)")),
            updatedAtMillis: try Self.integer(row[first + 1], "the update time of \(what)"), source: source,
            renewalInfo: renewalInfo)
    }

    /// A ledger row: its transaction id in column `id`, its JWS and payload from column `jws` on.
    func ledgerEntry(_ row: PostgresRow, from id: Int, jws: Int? = nil, of original: String)
        throws(NotificationStoreFailure) -> SignedTransaction
    {
        let transactionId = try Self.text(row[id], "a ledger row's transaction id")
        let first = jws ?? id + 1
        let entry: SignedTransaction = try snapshot(
            row[first], row[first + 1], what: "transaction \(transactionId.prefix(40)) of \(original.prefix(40))")
        guard entry.payload.transactionId == transactionId else {
            throw Self.corrupt(
                "the ledger row \(transactionId.prefix(40)) of \(original.prefix(40)) holds transaction "
                    + "\(entry.payload.transactionId.prefix(40))")
        }
        return entry
    }

    /// A purchase row (transaction_id, jws, payload from `first`), checked against the app and environment it
    /// was read for.
    func purchase(_ row: PostgresRow, from first: Int, bundleId: String, environment: Environment)
        throws(NotificationStoreFailure) -> SignedTransaction
    {
        let id = try Self.text(row[first], "a purchase's transaction id")
        let purchase: SignedTransaction = try snapshot(
            row[first + 1], row[first + 2], what: "purchase \(id.prefix(40))")
        let payload = purchase.payload
        guard payload.transactionId == id, payload.bundleId == bundleId, payload.environment == environment else {
            throw Self.corrupt("the purchase row \(id.prefix(40)) holds another transaction")
        }
        return purchase
    }

    /// Throws past the ledger limit.
    func withinLedgerLimit(_ count: Int, _ holder: String) throws(NotificationStoreFailure) {
        guard count <= limits.transactionsPerRead else {
            throw NotificationStoreFailure(
                "subscription store: \(holder) hold more than \(limits.transactionsPerRead) transactions",
                kind: .limitExceeded)
        }
    }

    /// A snapshot from its JWS and payload cells, each bounded by `limits.snapshotBytes`.
    func snapshot<Payload: AppleSignedPayload & ProtoMessage>(
        _ jws: PostgresCell, _ payload: PostgresCell, what: String
    ) throws(NotificationStoreFailure) -> SignedSnapshot<Payload> {
        if let length = jws.bytes?.count, length > limits.snapshotBytes {
            throw Self.corrupt("the JWS of the \(what) is longer than \(limits.snapshotBytes) bytes")
        }
        let text = try Self.text(jws, "the JWS of the \(what)")
        guard let bytes = try Self.bytes(payload, limit: limits.snapshotBytes, "the payload of the \(what)") else {
            throw Self.corrupt("the payload of the \(what) is NULL")
        }
        let decoded: Payload
        do {
            decoded = try Payload(serializedBytes: bytes)
        } catch {
            throw Self.corrupt("the payload of the \(what) does not decode")
        }
        return SignedSnapshot(jws: text, payload: decoded)
    }

    // MARK: Cells

    /// A text cell that must not be NULL.
    static func text(_ cell: PostgresCell?, _ what: String) throws(NotificationStoreFailure) -> String {
        guard let cell else { throw corrupt("\(what) is missing") }
        let text: String?
        do {
            text = try cell.string()
        } catch {
            throw corrupt("\(what): \(error)")
        }
        guard let text else { throw corrupt("\(what) is NULL") }
        return text
    }

    /// An integer cell that must not be NULL.
    static func integer(_ cell: PostgresCell?, _ what: String) throws(NotificationStoreFailure) -> Int64 {
        guard let value = try optionalInteger(cell, what) else { throw corrupt("\(what) is NULL") }
        return value
    }

    /// An integer cell, nil for NULL.
    static func optionalInteger(_ cell: PostgresCell?, _ what: String) throws(NotificationStoreFailure) -> Int64? {
        guard let cell else { throw corrupt("\(what) is missing") }
        do {
            return try cell.int()
        } catch {
            throw corrupt("\(what): \(error)")
        }
    }

    /// A `bytea` cell of at most `limit` bytes, nil for NULL.
    static func bytes(_ cell: PostgresCell, limit: Int, _ what: String) throws(NotificationStoreFailure) -> [UInt8]? {
        // The text form is `\x` and two hex digits per byte.
        if let length = cell.bytes?.count, length > 2 * limit + 2 {
            throw corrupt("\(what) is longer than \(limit) bytes")
        }
        do {
            return try cell.data()
        } catch {
            throw corrupt("\(what): \(error)")
        }
    }

    /// A subscription key from columns `first` (bundle id), `first + 1` (environment), `first + 2`.
    static func key(_ row: PostgresRow, from first: Int) throws(NotificationStoreFailure) -> SubscriptionKey {
        let name = try text(row[first + 1], "a key's environment")
        guard let environment = AppleNames.environment(named: name) else {
            throw corrupt("a key names an unknown environment '\(name.prefix(40))'")
        }
        return SubscriptionKey(
            bundleId: try text(row[first], "a key's bundle id"), environment: environment,
            originalTransactionId: try text(row[first + 2], "a key's original transaction id"))
    }

    /// A failure that retrying does not cure: what is stored does not read back.
    static func corrupt(_ what: String) -> NotificationStoreFailure {
        NotificationStoreFailure("subscription store: \(what)", kind: .corrupt)
    }

    // MARK: Parameters

    /// The key as the first three statement parameters.
    static func parameters(_ key: SubscriptionKey) -> [PostgresValue?] {
        [.text(key.bundleId), .text(AppleNames.environment(key.environment)), .text(key.originalTransactionId)]
    }

    /// An optional integer parameter (nil: NULL).
    static func value(_ integer: Int64?) -> PostgresValue? { integer.map { .integer($0) } }

    /// `$first, $first+1, …`: `count` placeholders.
    static func placeholders(from first: Int, count: Int) -> String {
        (first..<first + count).map { "$\($0)" }.joined(separator: ", ")
    }

}
