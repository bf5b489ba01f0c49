extension PostgresSchema {
    /// Version 2: the subscription state, its ledger and event outbox (`PostgresSubscriptionStore`;
    /// docs/subscription-state.md, "PostgreSQL").
    ///
    /// The tables are the SQLite file's (`SQLiteSubscriptionSchema`), column for column, with PostgreSQL's types:
    /// `bigint` dates in UNIX ms, `boolean` flags, `bytea` payloads. Key columns are `COLLATE "C"`, so keys sort
    /// byte by byte whatever the database's locale: the order `recordKeys(after:)` walks is SQLite's, and a
    /// locale's collation rules never make two keys compare equal.
    ///
    /// Two rows are locks as well as values: `subscription_event_counter` hands out event positions (updating it
    /// locks it until the commit, so events become visible in position order), and `subscription_projection`
    /// holds the projected log position (numeric, as `StorePosition` is two unsigned 64-bit numbers).
    static let subscriptionState = PostgresMigration(
        version: 2, name: "subscriptionState",
        statements: [
            """
            CREATE TABLE subscription_records(
              bundle_id text COLLATE "C" NOT NULL,
              environment text COLLATE "C" NOT NULL,
              original_transaction_id text COLLATE "C" NOT NULL,
              version bigint NOT NULL,
              updated_at bigint NOT NULL,
              source text NOT NULL,
              current_transaction_id text NOT NULL,
              app_account_token text COLLATE "C" NOT NULL,
              product_id text NOT NULL,
              subscription_group_identifier text NOT NULL,
              ownership_type text NOT NULL,
              expires_date bigint,
              revocation_date bigint,
              transaction_signed_date bigint,
              auto_renew boolean NOT NULL,
              auto_renew_product_id text NOT NULL,
              in_billing_retry boolean NOT NULL,
              grace_period_expires_date bigint,
              renewal_signed_date bigint,
              renewal_jws text,
              renewal_payload bytea,
              PRIMARY KEY(bundle_id, environment, original_transaction_id))
            """,
            """
            CREATE INDEX subscription_records_customer
              ON subscription_records(bundle_id, environment, app_account_token)
              WHERE app_account_token <> ''
            """,
            """
            CREATE TABLE subscription_transactions(
              bundle_id text COLLATE "C" NOT NULL,
              environment text COLLATE "C" NOT NULL,
              original_transaction_id text COLLATE "C" NOT NULL,
              transaction_id text COLLATE "C" NOT NULL,
              signed_date bigint,
              jws text NOT NULL,
              payload bytea NOT NULL,
              PRIMARY KEY(bundle_id, environment, original_transaction_id, transaction_id))
            """,
            """
            CREATE TABLE subscription_purchases(
              bundle_id text COLLATE "C" NOT NULL,
              environment text COLLATE "C" NOT NULL,
              transaction_id text COLLATE "C" NOT NULL,
              original_transaction_id text COLLATE "C" NOT NULL,
              product_id text NOT NULL,
              product_type text NOT NULL,
              app_account_token text COLLATE "C" NOT NULL,
              purchase_date bigint,
              revocation_date bigint,
              signed_date bigint,
              updated_at bigint NOT NULL,
              source text NOT NULL,
              jws text NOT NULL,
              payload bytea NOT NULL,
              PRIMARY KEY(bundle_id, environment, transaction_id))
            """,
            """
            CREATE INDEX subscription_purchases_customer
              ON subscription_purchases(bundle_id, environment, app_account_token)
              WHERE app_account_token <> ''
            """,
            """
            CREATE INDEX subscription_purchases_original
              ON subscription_purchases(bundle_id, environment, original_transaction_id)
            """,
            """
            CREATE TABLE subscription_projection(
              id integer PRIMARY KEY CHECK (id = 1),
              projected_major numeric(20, 0) NOT NULL CHECK (projected_major BETWEEN 0 AND 18446744073709551615),
              projected_minor numeric(20, 0) NOT NULL CHECK (projected_minor BETWEEN 0 AND 18446744073709551615))
            """,
            "INSERT INTO subscription_projection(id, projected_major, projected_minor) VALUES (1, 0, 0)",
            """
            CREATE TABLE subscription_events(
              position bigint PRIMARY KEY,
              event_id text NOT NULL UNIQUE,
              bundle_id text COLLATE "C" NOT NULL,
              environment text COLLATE "C" NOT NULL,
              original_transaction_id text COLLATE "C" NOT NULL,
              sequence bigint NOT NULL,
              type integer NOT NULL,
              occurred_at bigint NOT NULL,
              payload bytea NOT NULL)
            """,
            "CREATE INDEX subscription_events_app ON subscription_events(bundle_id, position)",
            "CREATE INDEX subscription_events_occurred ON subscription_events(occurred_at)",
            """
            CREATE TABLE subscription_event_counter(
              id integer PRIMARY KEY CHECK (id = 1),
              last bigint NOT NULL)
            """,
            "INSERT INTO subscription_event_counter(id, last) VALUES (1, 0)",
            """
            CREATE TABLE subscription_event_cursors(
              bundle_id text COLLATE "C" NOT NULL,
              environment text COLLATE "C" NOT NULL,
              original_transaction_id text COLLATE "C" NOT NULL,
              sequence bigint NOT NULL,
              facts bytea,
              next_transition bigint,
              PRIMARY KEY(bundle_id, environment, original_transaction_id))
            """,
            """
            CREATE INDEX subscription_event_cursors_due ON subscription_event_cursors(next_transition)
              WHERE next_transition IS NOT NULL
            """,
            """
            CREATE TABLE subscription_event_pruning(
              id integer PRIMARY KEY CHECK (id = 1),
              through bigint NOT NULL)
            """,
            // The analysts' view: SQLite's columns and status rules, the clock the server's (`now()`, the start of
            // the query's transaction). A date outside years 1 to 9999 shows NULL rather than failing the query.
            """
            CREATE VIEW subscription_state AS
              SELECT s.*, CASE s.status WHEN 1 THEN 'active' WHEN 2 THEN 'expired' WHEN 3 THEN 'billing_retry'
                  WHEN 4 THEN 'billing_grace_period' WHEN 5 THEN 'revoked' ELSE 'none' END AS status_name
              FROM (
                SELECT r.bundle_id, r.environment, r.original_transaction_id, r.product_id,
                  r.subscription_group_identifier,
                  CASE
                    WHEN r.current_transaction_id = '' THEN 0
                    WHEN r.revocation_date IS NOT NULL THEN 5
                    WHEN r.expires_date IS NULL OR r.expires_date > n.now_ms THEN 1
                    WHEN r.in_billing_retry AND r.grace_period_expires_date > n.now_ms THEN 4
                    WHEN r.in_billing_retry THEN 3
                    ELSE 2
                  END AS status,
                  r.expires_date,
                  CASE WHEN r.expires_date BETWEEN -62135596800000 AND 253402300799999
                    THEN to_timestamp(r.expires_date / 1000) AT TIME ZONE 'UTC' END AS expires_at,
                  r.grace_period_expires_date,
                  CASE WHEN r.grace_period_expires_date BETWEEN -62135596800000 AND 253402300799999
                    THEN to_timestamp(r.grace_period_expires_date / 1000) AT TIME ZONE 'UTC'
                  END AS grace_period_expires_at,
                  r.auto_renew, r.auto_renew_product_id, r.in_billing_retry,
                  r.revocation_date,
                  CASE WHEN r.revocation_date BETWEEN -62135596800000 AND 253402300799999
                    THEN to_timestamp(r.revocation_date / 1000) AT TIME ZONE 'UTC' END AS revocation_at,
                  r.ownership_type, r.app_account_token, r.current_transaction_id,
                  r.transaction_signed_date, r.renewal_signed_date,
                  r.version, r.updated_at,
                  CASE WHEN r.updated_at BETWEEN -62135596800000 AND 253402300799999
                    THEN to_timestamp(r.updated_at / 1000) AT TIME ZONE 'UTC' END AS updated_at_utc,
                  r.source
                FROM subscription_records AS r,
                  (SELECT floor(extract(epoch FROM now()) * 1000)::bigint AS now_ms) AS n) AS s
            """,
        ])
}
