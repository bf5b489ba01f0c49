extension PostgresSchema {
    /// The large columns (`largeColumns`): compressed with lz4 where the server has it, else stored out of line
    /// uncompressed. PostgreSQL compresses a value past ~2 kB with its own pglz by default, which costs more CPU than
    /// the rest of an insert (a notification's JWS is ~10 kB of base64 whose certificate chains repeat): lz4 finds the
    /// repeats at a small fraction of that. Values already stored keep their compression; new ones use this.
    static let largeColumns: [(table: String, column: String)] = [
        ("notifications", "signed_payload"),
        ("subscription_records", "renewal_jws"), ("subscription_records", "renewal_payload"),
        ("subscription_transactions", "jws"), ("subscription_transactions", "payload"),
        ("subscription_purchases", "jws"), ("subscription_purchases", "payload"),
        ("subscription_events", "payload"),
    ]

    /// Version 4: `largeColumns` compressed with lz4 (or, on a server built without it, not compressed).
    static let largeValues = PostgresMigration(
        version: 4, name: "largeValues",
        statements: [
            """
            DO $$
            BEGIN
              \(largeColumns.map { "ALTER TABLE \($0.table) ALTER COLUMN \($0.column) SET COMPRESSION lz4;" }
                .joined(separator: "\n  "))
            EXCEPTION WHEN feature_not_supported THEN
              \(largeColumns.map { "ALTER TABLE \($0.table) ALTER COLUMN \($0.column) SET STORAGE EXTERNAL;" }
                .joined(separator: "\n  "))
            END
            $$
            """
        ])
}
