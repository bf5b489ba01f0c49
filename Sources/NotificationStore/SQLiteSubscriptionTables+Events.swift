import ProtoCodec
import SubscriptionState

/// The events and event cursors (`SQLiteSubscriptionSchema.events`), inside the caller's transaction.
extension SQLiteSubscriptionTables {
    /// Makes and keeps the events of a record's (or purchase's) state after a change, and moves its cursor.
    func recordEvents(
        of key: SubscriptionKey, at nowMillis: Int64,
        make: (SubscriptionEventCursor?) -> SubscriptionEventMaker.Outcome
    ) throws(NotificationStoreFailure) -> [SubscriptionEvent] {
        let held = try cursor(key)
        let outcome = make(held)
        for event in outcome.events {
            try database.query(
                "INSERT INTO subscription_events(event_id, bundle_id, environment, original_transaction_id, "
                    + "sequence, type, occurred_at, payload) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                bind: [.text(event.eventId)] + Self.bind(key) + [
                    .integer(Int64(bitPattern: event.sequence)), .integer(Int64(event.type.rawValue)),
                    .integer(nowMillis), .blob(event.serializedBytes()),
                ]
            ) { _ in false }
        }
        if outcome.cursor != held || held == nil {
            try database.query(
                "INSERT OR REPLACE INTO subscription_event_cursors(bundle_id, environment, original_transaction_id, "
                    + "sequence, facts, next_transition) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                bind: Self.bind(key) + [
                    .integer(Int64(bitPattern: outcome.cursor.sequence)),
                    outcome.cursor.facts.map { .blob($0.encoded) } ?? .null, .integer(outcome.nextTransitionMillis),
                ]
            ) { _ in false }
        } else {
            try database.query(
                "UPDATE subscription_event_cursors SET next_transition = ?4 "
                    + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
                bind: Self.bind(key) + [.integer(outcome.nextTransitionMillis)]
            ) { _ in false }
        }
        return outcome.events
    }

    /// The cursor of `key`, or nil before its first change.
    func cursor(_ key: SubscriptionKey) throws(NotificationStoreFailure) -> SubscriptionEventCursor? {
        var found: SubscriptionEventCursor?
        var damaged = false
        try database.query(
            "SELECT sequence, facts FROM subscription_event_cursors "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
            bind: Self.bind(key)
        ) { row throws(NotificationStoreFailure) in
            var facts: SubscriptionEventFacts?
            if !row.isNull(1) {
                facts =
                    try row.withBlob(1, limit: limits.snapshotBytes) { SubscriptionEventFacts(encoded: Array($0)) }
                    ?? nil
                damaged = facts == nil
            }
            found = SubscriptionEventCursor(sequence: UInt64(bitPattern: row.integer(0)), facts: facts)
            return false
        }
        if damaged {
            throw NotificationStoreFailure(
                "subscription store: the event cursor of \(key.originalTransactionId) does not decode", kind: .corrupt)
        }
        return found
    }

    /// Keys whose next transition is due by `nowMillis`, earliest first.
    func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int) throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    {
        var keys: [SubscriptionKey] = []
        if bundleIds.isEmpty { return keys }
        let placeholders = (0..<bundleIds.count).map { "?\($0 + 3)" }.joined(separator: ", ")
        try database.query(
            "SELECT bundle_id, environment, original_transaction_id FROM subscription_event_cursors "
                + "INDEXED BY subscription_event_cursors_due "
                + "WHERE next_transition IS NOT NULL AND next_transition <= ?1 AND bundle_id IN (\(placeholders)) "
                + "ORDER BY next_transition LIMIT ?2",
            bind: [.integer(nowMillis), .integer(Int64(max(0, limit)))] + bundleIds.map { .text($0) }
        ) { row throws(NotificationStoreFailure) in
            if let key = Self.key(row, from: 0) { keys.append(key) }
            return true
        }
        return keys
    }

    /// The earliest next transition of `bundleIds`' cursors, or nil.
    func nextTransition(bundleIds: [String]) throws(NotificationStoreFailure) -> Int64? {
        var next: Int64?
        if bundleIds.isEmpty { return nil }
        let placeholders = (0..<bundleIds.count).map { "?\($0 + 1)" }.joined(separator: ", ")
        try database.query(
            "SELECT min(next_transition) FROM subscription_event_cursors "
                + "WHERE next_transition IS NOT NULL AND bundle_id IN (\(placeholders))",
            bind: bundleIds.map { .text($0) }
        ) { row throws(NotificationStoreFailure) in
            next = row.isNull(0) ? nil : row.integer(0)
            return false
        }
        return next
    }

    /// Forgets when time changes `key`'s state next (its record is gone).
    func clearNextTransition(of key: SubscriptionKey) throws(NotificationStoreFailure) {
        try database.query(
            "UPDATE subscription_event_cursors SET next_transition = NULL "
                + "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3",
            bind: Self.bind(key)
        ) { _ in false }
    }

    /// Record keys after `key` in key order.
    func recordKeys(after key: SubscriptionKey?, limit: Int) throws(NotificationStoreFailure) -> [SubscriptionKey] {
        var keys: [SubscriptionKey] = []
        let start = key.map(Self.bind) ?? [.text(""), .text(""), .text("")]
        try database.query(
            "SELECT bundle_id, environment, original_transaction_id FROM subscription_records "
                + "WHERE (bundle_id, environment, original_transaction_id) > (?1, ?2, ?3) "
                + "ORDER BY bundle_id, environment, original_transaction_id LIMIT ?4",
            bind: start + [.integer(Int64(max(0, limit)))]
        ) { row throws(NotificationStoreFailure) in
            if let key = Self.key(row, from: 0) { keys.append(key) }
            return true
        }
        return keys
    }

    /// Events after `position`, of one app when `bundleId` is given.
    func events(after position: Int64, bundleId: String?, limit: Int) throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    {
        var events: [StoredSubscriptionEvent] = []
        var damaged: Int64?
        let sql =
            "SELECT position, payload FROM subscription_events WHERE position > ?1 "
            + (bundleId == nil ? "" : "AND bundle_id = ?3 ") + "ORDER BY position LIMIT ?2"
        try database.query(
            sql,
            bind: [.integer(position), .integer(Int64(max(0, limit)))] + (bundleId.map { [.text($0)] } ?? [])
        ) { row throws(NotificationStoreFailure) in
            let at = row.integer(0)
            guard
                let event = try row.withBlob(
                    1, limit: Self.eventBytes(limits), { try? SubscriptionEvent(serializedBytes: Array($0)) })
                    ?? nil
            else {
                damaged = at
                return false
            }
            events.append(StoredSubscriptionEvent(position: at, event: event))
            return true
        }
        if let damaged {
            throw NotificationStoreFailure(
                "subscription store: the event at position \(damaged) does not decode", kind: .corrupt)
        }
        return events
    }

    /// The newest event's position, 0 when none.
    func lastEventPosition() throws(NotificationStoreFailure) -> Int64 {
        var last: Int64 = 0
        try database.query("SELECT max(position) FROM subscription_events", bind: []) { row in
            last = row.isNull(0) ? 0 : row.integer(0)
            return false
        }
        return last
    }

    /// Deletes events older than `millis` and remembers the newest position deleted; how many.
    func pruneEvents(occurredBefore millis: Int64) throws(NotificationStoreFailure) -> Int {
        var newest: Int64?
        try database.query(
            "SELECT max(position) FROM subscription_events WHERE occurred_at < ?1", bind: [.integer(millis)]
        ) { row throws(NotificationStoreFailure) in
            newest = row.isNull(0) ? nil : row.integer(0)
            return false
        }
        guard let newest else { return 0 }
        try database.query("DELETE FROM subscription_events WHERE occurred_at < ?1", bind: [.integer(millis)]) {
            _ throws(NotificationStoreFailure) in false
        }
        let deleted = database.changes
        try database.query(
            "INSERT INTO subscription_event_pruning(id, through) VALUES(1, ?1) "
                + "ON CONFLICT(id) DO UPDATE SET through = max(through, excluded.through)",
            bind: [.integer(newest)]
        ) { _ throws(NotificationStoreFailure) in false }
        return deleted
    }

    /// The newest position pruning deleted, 0 when none.
    func eventsPrunedThrough() throws(NotificationStoreFailure) -> Int64 {
        var through: Int64 = 0
        try database.query("SELECT through FROM subscription_event_pruning WHERE id = 1", bind: []) {
            row throws(NotificationStoreFailure) in
            through = row.integer(0)
            return false
        }
        return through
    }

    /// The largest event read back: an event holds a transaction's and a renewal info's JWS and their payloads,
    /// each at most `snapshotBytes`, so four of them.
    static func eventBytes(_ limits: SubscriptionStoreLimits) -> Int { 4 * limits.snapshotBytes + 4096 }

    private static func key(_ row: SQLiteDatabase.Row, from column: Int32) -> SubscriptionKey? {
        guard let environment = AppleNames.environment(named: row.text(column + 1)) else { return nil }
        return SubscriptionKey(
            bundleId: row.text(column), environment: environment, originalTransactionId: row.text(column + 2))
    }
}
