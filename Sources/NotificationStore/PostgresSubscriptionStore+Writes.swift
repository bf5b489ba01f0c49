import Postgres
import ProtoCodec
import SubscriptionState

/// The statements of the store's transactions: locks, the record read for update, the writes, the outbox. An
/// apply reads and writes through its `ApplyScope`, which sends them in a few round trips.
extension PostgresSubscriptionStore {
    /// An event made inside a transaction, kept at its end (`keep`) once every record lock is held.
    struct PendingEvent {
        var key: SubscriptionKey
        var event: SubscriptionEvent
        var occurredAt: Int64
    }

    // MARK: Locks

    /// The advisory lock of a subscription's record and event cursor (a one-time purchase's cursor is keyed
    /// the same way, by its original transaction id).
    static func lockKey(_ key: SubscriptionKey) -> Int64 {
        lockKey(["subscription", key.bundleId, AppleNames.environment(key.environment), key.originalTransactionId])
    }

    /// The advisory lock of a one-time purchase's row.
    static func lockKey(_ key: PurchaseKey) -> Int64 {
        lockKey(["purchase", key.bundleId, AppleNames.environment(key.environment), key.transactionId])
    }

    /// A 64-bit FNV-1a hash of `parts` (separated by U+001F): the same on every replica and release. Two keys
    /// that collide only wait for each other.
    static func lockKey(_ parts: [String]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, part) in parts.enumerated() {
            if index > 0 {
                hash ^= 0x1F
                hash = hash &* 0x0000_0100_0000_01B3
            }
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
        }
        return Int64(bitPattern: hash)
    }

    /// The statement taking the transaction-scoped advisory locks `keys`, in their order (a volatile function
    /// in the select list runs after the `ORDER BY`); nil for none.
    static func lockQuery(_ keys: [Int64]) -> PostgresQuery? {
        if keys.isEmpty { return nil }
        let array = "{" + keys.map { String($0) }.joined(separator: ",") + "}"
        return PostgresQuery(
            "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) WITH ORDINALITY AS l(k, n) ORDER BY n",
            [.text(array)])
    }

    // MARK: Records and purchases

    /// The statements reading the record of `key` (its row locked until the commit: a `removeAll` waits for it)
    /// and its ledger. Run with the key's advisory lock held; `record(_:row:ledger:)` reads their rows.
    func recordQueries(_ key: SubscriptionKey) -> [PostgresQuery] {
        [
            PostgresQuery(
                "SELECT version, updated_at, source, renewal_jws, renewal_payload FROM subscription_records "
                    + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3 FOR UPDATE",
                Self.parameters(key)),
            PostgresQuery(
                "SELECT transaction_id, jws, payload FROM subscription_transactions "
                    + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3 LIMIT $4",
                Self.parameters(key) + [.integer(Int64(limits.transactionsPerRead) + 1)]),
        ]
    }

    /// The record of `key` from the rows of `recordQueries`; nil when none is stored.
    func record(_ key: SubscriptionKey, row rows: PostgresRows, ledger: PostgresRows) throws(NotificationStoreFailure)
        -> SubscriptionRecord?
    {
        guard let row = rows.first else { return nil }
        let bookkeeping = try bookkeeping(row, from: 0, of: key.originalTransactionId)
        try withinLedgerLimit(ledger.count, "the record \(key.originalTransactionId)")
        let transactions = try ledger.map { row throws(NotificationStoreFailure) in
            try ledgerEntry(row, from: 0, of: key.originalTransactionId)
        }
        return try bookkeeping.record(key, transactions: transactions)
    }

    /// The statement reading the purchase of `key`. Run with its advisory lock held.
    static func purchaseQuery(_ key: PurchaseKey) -> PostgresQuery {
        PostgresQuery(
            "SELECT transaction_id, jws, payload FROM subscription_purchases "
                + "WHERE bundle_id = $1 AND environment = $2 AND transaction_id = $3",
            [.text(key.bundleId), .text(AppleNames.environment(key.environment)), .text(key.transactionId)])
    }

    /// Queues the writes of what `outcome` changed of its record: the filed ledger row and the record's row (its
    /// renewal columns only when the renewal info changed).
    static func write(_ outcome: SubscriptionFold.RecordOutcome, in scope: ApplyScope) {
        let record = outcome.record
        let key = parameters(record.key)
        scope.remember(record)
        if let filed = outcome.filedTransaction {
            scope.write(
                PostgresQuery(
                    "INSERT INTO subscription_transactions(bundle_id, environment, original_transaction_id, "
                        + "transaction_id, signed_date, jws, payload) VALUES ($1, $2, $3, $4, $5, $6, $7) "
                        + "ON CONFLICT (bundle_id, environment, original_transaction_id, transaction_id) DO UPDATE "
                        + "SET signed_date = excluded.signed_date, jws = excluded.jws, payload = excluded.payload",
                    key + [
                        .text(filed.payload.transactionId), value(filed.signedDateMillis), .text(filed.jws),
                        .bytes(filed.payload.serializedBytes()),
                    ]))
        }
        let facts = SubscriptionFold.facts(of: record)
        let current = facts.transaction?.payload
        var columns: [PostgresValue?] =
            key + [
                .integer(Int64(bitPattern: record.version)), .integer(record.updatedAtMillis),
                .text(record.source?.rawValue ?? ""), .text(current?.transactionId ?? ""),
                .text(facts.appAccountToken), .text(facts.productId), .text(facts.subscriptionGroupIdentifier),
                .text(current.map(AppleNames.ownership) ?? ""), value(facts.expiresDateMillis),
                value(facts.revocationDateMillis), value(facts.transactionSignedDateMillis),
                .boolean(facts.autoRenew), .text(facts.autoRenewProductId), .boolean(facts.inBillingRetry),
                value(facts.gracePeriodExpiresDateMillis), value(facts.renewalSignedDateMillis),
            ]
        if outcome.renewalChanged || outcome.isNew {
            columns += [
                record.renewalInfo.map { .text($0.jws) },
                record.renewalInfo.map { .bytes($0.payload.serializedBytes()) },
            ]
            scope.write(
                PostgresQuery(
                    "INSERT INTO subscription_records(bundle_id, environment, original_transaction_id, version, "
                        + "updated_at, source, current_transaction_id, app_account_token, product_id, "
                        + "subscription_group_identifier, ownership_type, expires_date, revocation_date, "
                        + "transaction_signed_date, auto_renew, auto_renew_product_id, in_billing_retry, "
                        + "grace_period_expires_date, renewal_signed_date, renewal_jws, renewal_payload) "
                        + "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, "
                        + "$20, $21) ON CONFLICT (bundle_id, environment, original_transaction_id) DO UPDATE SET "
                        + "version = excluded.version, updated_at = excluded.updated_at, source = excluded.source, "
                        + "current_transaction_id = excluded.current_transaction_id, "
                        + "app_account_token = excluded.app_account_token, product_id = excluded.product_id, "
                        + "subscription_group_identifier = excluded.subscription_group_identifier, "
                        + "ownership_type = excluded.ownership_type, expires_date = excluded.expires_date, "
                        + "revocation_date = excluded.revocation_date, "
                        + "transaction_signed_date = excluded.transaction_signed_date, auto_renew = excluded.auto_renew, "
                        + "auto_renew_product_id = excluded.auto_renew_product_id, "
                        + "in_billing_retry = excluded.in_billing_retry, "
                        + "grace_period_expires_date = excluded.grace_period_expires_date, "
                        + "renewal_signed_date = excluded.renewal_signed_date, renewal_jws = excluded.renewal_jws, "
                        + "renewal_payload = excluded.renewal_payload",
                    columns))
        } else {
            // The renewal info is as stored: its (large) columns are left alone.
            scope.write(
                PostgresQuery(
                    "UPDATE subscription_records SET version = $4, updated_at = $5, source = $6, "
                        + "current_transaction_id = $7, app_account_token = $8, product_id = $9, "
                        + "subscription_group_identifier = $10, ownership_type = $11, expires_date = $12, "
                        + "revocation_date = $13, transaction_signed_date = $14, auto_renew = $15, "
                        + "auto_renew_product_id = $16, in_billing_retry = $17, grace_period_expires_date = $18, "
                        + "renewal_signed_date = $19 "
                        + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3",
                    columns), updatingOneRowOf: "the record \(record.key.originalTransactionId)")
        }
    }

    /// Queues keeping `purchase` (newer than the one stored) in `source`'s change at `nowMillis`.
    static func write(purchase: SignedTransaction, source: SnapshotSource, nowMillis: Int64, in scope: ApplyScope) {
        let payload = purchase.payload
        scope.remember(
            purchase,
            as: PurchaseKey(
                bundleId: payload.bundleId, environment: payload.environment, transactionId: payload.transactionId))
        scope.write(
            PostgresQuery(
                "INSERT INTO subscription_purchases(bundle_id, environment, transaction_id, original_transaction_id, "
                    + "product_id, product_type, app_account_token, purchase_date, revocation_date, signed_date, "
                    + "updated_at, source, jws, payload) "
                    + "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) "
                    + "ON CONFLICT (bundle_id, environment, transaction_id) DO UPDATE SET "
                    + "original_transaction_id = excluded.original_transaction_id, product_id = excluded.product_id, "
                    + "product_type = excluded.product_type, app_account_token = excluded.app_account_token, "
                    + "purchase_date = excluded.purchase_date, revocation_date = excluded.revocation_date, "
                    + "signed_date = excluded.signed_date, updated_at = excluded.updated_at, source = excluded.source, "
                    + "jws = excluded.jws, payload = excluded.payload",
                [
                    .text(payload.bundleId), .text(AppleNames.environment(payload.environment)),
                    .text(payload.transactionId), .text(payload.originalTransactionId), .text(payload.productId),
                    .text(AppleNames.productType(payload)), .text(payload.appAccountToken),
                    value(AppleNames.millis(payload.purchaseDate, exact: payload.purchaseDateMillis)),
                    value(AppleNames.millis(payload.revocationDate, exact: payload.revocationDateMillis)),
                    value(purchase.signedDateMillis), .integer(nowMillis), .text(source.rawValue), .text(purchase.jws),
                    .bytes(payload.serializedBytes()),
                ]))
    }

    /// The statement moving the projected position to `position` unless it is already past it: replicas
    /// projecting at once never move it back.
    static func projectedThroughQuery(_ position: StorePosition) -> PostgresQuery {
        PostgresQuery(
            "UPDATE subscription_projection SET projected_major = $1::numeric, projected_minor = $2::numeric "
                + "WHERE id = 1 AND (projected_major, projected_minor) < ($1::numeric, $2::numeric)",
            [.text(String(position.major)), .text(String(position.minor))])
    }

    // MARK: Events

    /// Makes the events of a record's (or purchase's) state after a change and moves its cursor; the events join
    /// `pending`, kept at the end of the transaction. Call with the key's advisory lock held.
    static func recordEvents(
        of key: SubscriptionKey, at nowMillis: Int64, in scope: ApplyScope,
        pending: inout [PendingEvent], make: (SubscriptionEventCursor?) -> SubscriptionEventMaker.Outcome
    ) async throws -> [SubscriptionEvent] {
        let held = try await scope.cursor(key)
        let outcome = make(held)
        for event in outcome.events { pending.append(PendingEvent(key: key, event: event, occurredAt: nowMillis)) }
        scope.remember(outcome.cursor, of: key)
        if outcome.cursor != held || held == nil {
            scope.write(
                PostgresQuery(
                    "INSERT INTO subscription_event_cursors(bundle_id, environment, original_transaction_id, sequence, "
                        + "facts, next_transition) VALUES ($1, $2, $3, $4, $5, $6) "
                        + "ON CONFLICT (bundle_id, environment, original_transaction_id) DO UPDATE "
                        + "SET sequence = excluded.sequence, facts = excluded.facts, "
                        + "next_transition = excluded.next_transition",
                    Self.parameters(key) + [
                        .integer(Int64(bitPattern: outcome.cursor.sequence)),
                        outcome.cursor.facts.map { .bytes($0.encoded) },
                        Self.value(outcome.nextTransitionMillis),
                    ]))
        } else {
            scope.write(
                PostgresQuery(
                    "UPDATE subscription_event_cursors SET next_transition = $4 "
                        + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3",
                    Self.parameters(key) + [Self.value(outcome.nextTransitionMillis)]))
        }
        return outcome.events
    }

    /// The statement reading the event cursor of `key`; `cursor(_:_:)` reads its rows.
    static func cursorQuery(_ key: SubscriptionKey) -> PostgresQuery {
        PostgresQuery(
            "SELECT sequence, facts FROM subscription_event_cursors "
                + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3",
            Self.parameters(key))
    }

    /// The cursor of `key` from the rows of `cursorQuery`, or nil before its first change.
    func cursor(_ key: SubscriptionKey, _ rows: PostgresRows) throws(NotificationStoreFailure)
        -> SubscriptionEventCursor?
    {
        guard let row = rows.first else { return nil }
        let sequence = try Self.integer(row[0], "the event cursor of \(key.originalTransactionId)")
        var facts: SubscriptionEventFacts?
        if let bytes = try Self.bytes(row[1], limit: limits.snapshotBytes, "the event cursor's facts") {
            guard let decoded = SubscriptionEventFacts(encoded: bytes) else {
                throw Self.corrupt("the event cursor of \(key.originalTransactionId) does not decode")
            }
            facts = decoded
        }
        return SubscriptionEventCursor(sequence: UInt64(bitPattern: sequence), facts: facts)
    }

    /// Queues forgetting when time changes `key`'s state next (its record is gone).
    static func clearNextTransition(of key: SubscriptionKey, in scope: ApplyScope) {
        scope.write(
            PostgresQuery(
                "UPDATE subscription_event_cursors SET next_transition = NULL "
                    + "WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3",
                parameters(key)))
    }

    /// Sends the scope's queued writes, then keeps `pending` at the next positions and announces them, last in
    /// the transaction: the counter row it updates stays locked until the commit, so the next transaction that
    /// makes events gets later positions and commits after this one (positions become visible in order). Every
    /// record lock is held by then, so nobody holding the counter waits for a record.
    static func keep(_ pending: [PendingEvent], in scope: ApplyScope) async throws {
        if pending.isEmpty {
            _ = try await scope.flush()
            return
        }
        let rows = try await scope.flush(
            then: PostgresQuery(
                "UPDATE subscription_event_counter SET last = last + $1 WHERE id = 1 RETURNING last",
                [.integer(Int64(pending.count))]))
        let last = try integer(rows?.first?[0], "the event counter")
        var position = last - Int64(pending.count)
        var start = 0
        var inserts: [PostgresQuery] = []
        while start < pending.count {
            let chunk = pending[start..<min(start + eventsPerInsert, pending.count)]
            var values: [String] = []
            var parameters: [PostgresValue?] = []
            for pending in chunk {
                position += 1
                values.append("(" + placeholders(from: parameters.count + 1, count: 9) + ")")
                let event = pending.event
                parameters += [
                    .integer(position), .text(event.eventId), .text(pending.key.bundleId),
                    .text(AppleNames.environment(pending.key.environment)), .text(pending.key.originalTransactionId),
                    .integer(Int64(bitPattern: event.sequence)), .integer(Int64(event.type.rawValue)),
                    .integer(pending.occurredAt), .bytes(event.serializedBytes()),
                ]
            }
            inserts.append(
                PostgresQuery(
                    "INSERT INTO subscription_events(position, event_id, bundle_id, environment, "
                        + "original_transaction_id, sequence, type, occurred_at, payload) VALUES "
                        + values.joined(separator: ", "), parameters))
            start += chunk.count
        }
        _ = try await scope.transaction.queries(
            inserts + [PostgresQuery("SELECT pg_notify($1, $2)", [.text(channel), .text(String(last))])])
    }

    /// Events per INSERT (9 parameters each, well under the protocol's 65,535).
    static let eventsPerInsert = 500
}
