extension PostgresSchema {
    /// Version 5: the configured policy the replicas publish at start (`PostgresSubscriptionStore.publish`), and the
    /// analysts' view `subscription_state` with the entitlement columns it makes possible.
    ///
    /// `subscription_policies` holds one row per published bundle id (its `subscriptions.refundPolicy`),
    /// `subscription_entitlement_products` one row per entitlement and product that unlocks it (`apps[].entitlements`,
    /// many-to-many); a publication replaces a bundle id's rows whole, so the last replica to start wins.
    ///
    /// The view keeps every column of version 2 as it was (PostgreSQL adds a view's new columns only at its end) and
    /// adds `entitled` and `entitlements`, by the reducer's rules (`SubscriptionRecord.state(at:policy:)`): entitled
    /// while active (1) or in billing grace (4); revoked (5), only under `untilExpiry` and before the revoked
    /// transaction's `expires_date`; a bundle id with no published policy is `immediate`. `entitlements` is the
    /// sorted names the current product unlocks while entitled, else an empty array.
    static let entitlements = PostgresMigration(
        version: 5, name: "entitlements",
        statements: [
            """
            CREATE TABLE subscription_policies(
              bundle_id text COLLATE "C" PRIMARY KEY,
              refund_policy text NOT NULL CHECK (refund_policy IN ('immediate', 'untilExpiry')),
              published_at timestamptz NOT NULL DEFAULT now())
            """,
            """
            CREATE TABLE subscription_entitlement_products(
              bundle_id text COLLATE "C" NOT NULL REFERENCES subscription_policies(bundle_id),
              product_id text COLLATE "C" NOT NULL,
              entitlement text COLLATE "C" NOT NULL,
              PRIMARY KEY(bundle_id, product_id, entitlement))
            """,
            // Version 2's statement up to `status_name`, word for word, then the two new columns. The record's
            // `product_id` is compared as "C", the mapping's collation, so its key serves the lookup.
            """
            CREATE OR REPLACE VIEW subscription_state AS
              SELECT s.*, CASE s.status WHEN 1 THEN 'active' WHEN 2 THEN 'expired' WHEN 3 THEN 'billing_retry'
                  WHEN 4 THEN 'billing_grace_period' WHEN 5 THEN 'revoked' ELSE 'none' END AS status_name,
                g.entitled,
                CASE WHEN g.entitled THEN coalesce(
                    (SELECT array_agg(m.entitlement ORDER BY m.entitlement) FROM subscription_entitlement_products AS m
                      WHERE m.bundle_id = s.bundle_id AND m.product_id = s.product_id COLLATE "C"),
                    '{}'::text[])
                  ELSE '{}'::text[] END AS entitlements
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
              LEFT JOIN subscription_policies AS p ON p.bundle_id = s.bundle_id
              CROSS JOIN LATERAL (
                SELECT CASE
                  WHEN s.status IN (1, 4) THEN true
                  WHEN s.status = 5 THEN coalesce(
                    p.refund_policy = 'untilExpiry'
                      AND s.expires_date > floor(extract(epoch FROM now()) * 1000)::bigint,
                    false)
                  ELSE false
                END AS entitled) AS g
            """,
        ])
}
