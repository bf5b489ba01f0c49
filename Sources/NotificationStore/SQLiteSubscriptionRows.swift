import ProtoCodec
import SubscriptionState

/// Reading rows back: every column from disk is bounded and checked before it becomes a value.
extension SQLiteSubscriptionTables {

    /// A record's row from column `first` on: version, updated_at, source, renewal JWS and payload.
    func bookkeeping(_ row: SQLiteDatabase.Row, from first: Int32, of original: String)
        throws(NotificationStoreFailure) -> RecordBookkeeping
    {
        let sourceName = row.text(first + 2)
        guard let source = SnapshotSource(rawValue: sourceName) else {
            throw corrupt("the record \(original) names an unknown source '\(sourceName.prefix(40))'")
        }
        let renewalInfo: SignedRenewalInfo? =
            row.isNull(first + 4) && row.isNull(first + 3)
            ? nil : try snapshot(row, jws: first + 3, payload: first + 4, what: "renewal info of \(original)")
        return RecordBookkeeping(
            version: UInt64(bitPattern: row.integer(first)), updatedAtMillis: row.integer(first + 1), source: source,
            renewalInfo: renewalInfo)
    }

    /// A ledger row: transaction_id, jws, payload from column `first`.
    func ledgerEntry(_ row: SQLiteDatabase.Row, from first: Int32, of original: String)
        throws(NotificationStoreFailure) -> SignedTransaction
    {
        let id = row.text(first)
        let entry: SignedTransaction = try snapshot(
            row, jws: first + 1, payload: first + 2, what: "transaction \(id.prefix(40)) of \(original)")
        guard entry.payload.transactionId == id else {
            throw corrupt(
                "the ledger row \(id.prefix(40)) of \(original) holds transaction \(entry.payload.transactionId)")
        }
        return entry
    }

    /// A purchase row (transaction_id, jws, payload), checked against the app and environment it was read for.
    func purchase(_ row: SQLiteDatabase.Row, bundleId: String, environment: Environment)
        throws(NotificationStoreFailure) -> SignedTransaction
    {
        let id = row.text(0)
        let purchase: SignedTransaction = try snapshot(row, jws: 1, payload: 2, what: "purchase \(id.prefix(40))")
        let payload = purchase.payload
        guard payload.transactionId == id, payload.bundleId == bundleId, payload.environment == environment
        else { throw corrupt("the purchase row \(id.prefix(40)) holds another transaction") }
        return purchase
    }

    /// True while `count` ledger rows are within the limit; throws past it.
    func withinLedgerLimit(_ count: Int, _ holder: String) throws(NotificationStoreFailure) -> Bool {
        guard count <= limits.transactionsPerRead else {
            throw NotificationStoreFailure(
                "subscription store: \(holder) hold more than \(limits.transactionsPerRead) transactions",
                kind: .limitExceeded)
        }
        return true
    }

    /// A snapshot from its JWS and payload columns, bounded by `limits.snapshotBytes`.
    func snapshot<Payload: AppleSignedPayload & ProtoMessage>(
        _ row: SQLiteDatabase.Row, jws: Int32, payload: Int32, what: String
    ) throws(NotificationStoreFailure) -> SignedSnapshot<Payload> {
        guard let text = row.text(jws, limit: limits.snapshotBytes) else {
            throw corrupt("the JWS of the \(what) is longer than \(limits.snapshotBytes) bytes")
        }
        let decoded = try row.withBlob(payload, limit: limits.snapshotBytes) {
            bytes throws(NotificationStoreFailure) -> Payload in
            do {
                return try Payload(serializedBytes: bytes)
            } catch {
                throw corrupt("the payload of the \(what) does not decode")
            }
        }
        guard let decoded else {
            throw corrupt("the payload of the \(what) is longer than \(limits.snapshotBytes) bytes")
        }
        return SignedSnapshot(jws: text, payload: decoded)
    }

    /// A failure that retrying does not cure: what is stored does not read back.
    func corrupt(_ what: String) -> NotificationStoreFailure {
        NotificationStoreFailure("subscription store: \(what)", kind: .corrupt)
    }

    /// The key as the first three statement parameters.
    static func bind(_ key: SubscriptionKey) -> [SQLiteDatabase.Value] {
        [.text(key.bundleId), .text(AppleNames.environment(key.environment)), .text(key.originalTransactionId)]
    }

}
