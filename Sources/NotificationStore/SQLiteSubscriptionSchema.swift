/// The subscription state's tables in the notification store's SQLite file (docs/subscription-state.md,
/// "Storage"), versioned on their own in `state_progress`.
///
/// The state is a projection (of the notification log and Apple's reads), so a release that changes these tables
/// does not migrate rows: it drops the state's tables, creates its own and resets the projected position to zero,
/// and the projector replays the log. A file written by a newer release is refused instead of dropped, so going
/// back a release never silently discards a newer state.
enum SQLiteSubscriptionSchema {
    /// The version of the tables below.
    static let version: Int64 = 1

    /// Every state table and view any release made, dropped before the current ones are created.
    static let dropAll = """
        DROP VIEW IF EXISTS subscription_state;
        DROP TABLE IF EXISTS subscription_records;
        DROP TABLE IF EXISTS subscription_transactions;
        DROP TABLE IF EXISTS subscription_purchases;
        """

    /// Where the state's own version and the projection position are kept: one row, id 1.
    static let progress = """
        CREATE TABLE IF NOT EXISTS state_progress(
          id INTEGER PRIMARY KEY CHECK (id = 1),
          schema_version INTEGER NOT NULL,
          projected_major INTEGER NOT NULL,
          projected_minor INTEGER NOT NULL)
        """

    /// The subscription events and each subscription's event cursor. Not part of the state's versioned tables:
    /// they are what consumers were told, so a release that replays the state keeps them (the replay is compared
    /// with the cursors, and only real differences make events). Created when missing, never dropped.
    ///
    /// `payload` is the `SubscriptionEvent` serialized (resume token empty); the other columns are for queries.
    /// `facts` is the cursor's `SubscriptionEventFacts.encoded`; `next_transition` when time changes the state
    /// next (UNIX ms), indexed for the timer.
    static let events = """
        CREATE TABLE IF NOT EXISTS subscription_events(
          position INTEGER PRIMARY KEY AUTOINCREMENT,
          event_id TEXT NOT NULL UNIQUE,
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          original_transaction_id TEXT NOT NULL,
          sequence INTEGER NOT NULL,
          type INTEGER NOT NULL,
          occurred_at INTEGER NOT NULL,
          payload BLOB NOT NULL);
        CREATE INDEX IF NOT EXISTS subscription_events_app ON subscription_events(bundle_id, position);
        CREATE INDEX IF NOT EXISTS subscription_events_occurred ON subscription_events(occurred_at);
        CREATE TABLE IF NOT EXISTS subscription_event_cursors(
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          original_transaction_id TEXT NOT NULL,
          sequence INTEGER NOT NULL,
          facts BLOB,
          next_transition INTEGER,
          PRIMARY KEY(bundle_id, environment, original_transaction_id)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS subscription_event_cursors_due ON subscription_event_cursors(next_transition)
          WHERE next_transition IS NOT NULL;
        CREATE TABLE IF NOT EXISTS subscription_event_pruning(
          id INTEGER PRIMARY KEY CHECK (id = 1),
          through INTEGER NOT NULL);
        """

    /// Creates the state's tables at `version` unless the file has them: in an empty file, or one of an
    /// older release (whose state tables are dropped; the projection then starts again from the log's start).
    /// Throws when the file was written by a newer release. One write transaction, so two processes opening
    /// one file do it once.
    static func prepare(_ database: SQLiteDatabase) throws(NotificationStoreFailure) {
        try database.inTransaction(.write) { () throws(NotificationStoreFailure) in
            try database.execute(progress)
            try database.execute(events)
            var stored: Int64?
            try database.query("SELECT schema_version FROM state_progress WHERE id = 1", bind: []) {
                stored = $0.integer(0)
                return false
            }
            if stored == version { return }
            if let stored, stored > version {
                throw NotificationStoreFailure(
                    "the SQLite store's subscription state has schema version \(stored), newer than this release's "
                        + "\(version) (it keeps the state in other tables): run that release, or drop its state "
                        + "(`DELETE FROM state_progress`: this release then makes its own tables and replays the log)")
            }
            try database.execute(dropAll)
            try database.execute(tables)
            try database.query(
                "INSERT OR REPLACE INTO state_progress(id, schema_version, projected_major, projected_minor) "
                    + "VALUES(1, ?, 0, 0)",
                bind: [.integer(version)]
            ) { _ in false }
        }
    }

    /// The tables, indexes and the analysts' view of version 1.
    ///
    /// Each snapshot is kept twice: `jws`, the compact JWS exactly as received (callers verify it themselves),
    /// and `payload`, its decoded ProtoCodec message serialized (`Transaction`, `RenewalInfo`), so a read
    /// decodes protobuf and never parses JSON or JWS again. The other columns are derived from them at each
    /// write, for queries and analysts; the payloads are the truth.
    ///
    /// The ledger's key includes `original_transaction_id`: a record's rows are one range of the primary key
    /// (no second index), and a transaction id that two subscriptions name (never from Apple) cannot move a row
    /// from one record to another.
    static let tables = """
        CREATE TABLE subscription_records(
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          original_transaction_id TEXT NOT NULL,
          version INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          source TEXT NOT NULL,
          current_transaction_id TEXT NOT NULL,
          app_account_token TEXT NOT NULL,
          product_id TEXT NOT NULL,
          subscription_group_identifier TEXT NOT NULL,
          ownership_type TEXT NOT NULL,
          expires_date INTEGER,
          revocation_date INTEGER,
          transaction_signed_date INTEGER,
          auto_renew INTEGER NOT NULL,
          auto_renew_product_id TEXT NOT NULL,
          in_billing_retry INTEGER NOT NULL,
          grace_period_expires_date INTEGER,
          renewal_signed_date INTEGER,
          renewal_jws TEXT,
          renewal_payload BLOB,
          PRIMARY KEY(bundle_id, environment, original_transaction_id));
        CREATE INDEX subscription_records_customer ON subscription_records(bundle_id, environment, app_account_token)
          WHERE app_account_token <> '';
        CREATE TABLE subscription_transactions(
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          original_transaction_id TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          signed_date INTEGER,
          jws TEXT NOT NULL,
          payload BLOB NOT NULL,
          PRIMARY KEY(bundle_id, environment, original_transaction_id, transaction_id));
        CREATE TABLE subscription_purchases(
          bundle_id TEXT NOT NULL,
          environment TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          original_transaction_id TEXT NOT NULL,
          product_id TEXT NOT NULL,
          product_type TEXT NOT NULL,
          app_account_token TEXT NOT NULL,
          purchase_date INTEGER,
          revocation_date INTEGER,
          signed_date INTEGER,
          updated_at INTEGER NOT NULL,
          source TEXT NOT NULL,
          jws TEXT NOT NULL,
          payload BLOB NOT NULL,
          PRIMARY KEY(bundle_id, environment, transaction_id));
        CREATE INDEX subscription_purchases_customer ON subscription_purchases(bundle_id, environment, app_account_token)
          WHERE app_account_token <> '';
        CREATE INDEX subscription_purchases_original
          ON subscription_purchases(bundle_id, environment, original_transaction_id);
        CREATE VIEW subscription_state AS
          SELECT *, CASE status WHEN 1 THEN 'active' WHEN 2 THEN 'expired' WHEN 3 THEN 'billing_retry'
              WHEN 4 THEN 'billing_grace_period' WHEN 5 THEN 'revoked' ELSE 'none' END AS status_name
          FROM (
            SELECT r.bundle_id, r.environment, r.original_transaction_id, r.product_id,
              r.subscription_group_identifier,
              CASE
                WHEN r.current_transaction_id = '' THEN 0
                WHEN r.revocation_date IS NOT NULL THEN 5
                WHEN r.expires_date IS NULL OR r.expires_date > n.now_ms THEN 1
                WHEN r.in_billing_retry <> 0 AND r.grace_period_expires_date > n.now_ms THEN 4
                WHEN r.in_billing_retry <> 0 THEN 3
                ELSE 2
              END AS status,
              r.expires_date, datetime(r.expires_date / 1000, 'unixepoch') AS expires_at,
              r.grace_period_expires_date,
              datetime(r.grace_period_expires_date / 1000, 'unixepoch') AS grace_period_expires_at,
              r.auto_renew, r.auto_renew_product_id, r.in_billing_retry,
              r.revocation_date, datetime(r.revocation_date / 1000, 'unixepoch') AS revocation_at,
              r.ownership_type, r.app_account_token, r.current_transaction_id,
              r.transaction_signed_date, r.renewal_signed_date,
              r.version, r.updated_at, datetime(r.updated_at / 1000, 'unixepoch') AS updated_at_utc, r.source
            FROM subscription_records AS r,
              (SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) AS now_ms) AS n);
        """
}
