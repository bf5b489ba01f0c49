extension PostgresSchema {
    /// Version 1: the notification log (`PostgresNotificationStore`). `notifications` mirrors the SQLite table: one
    /// row per notificationUUID at a position from an identity sequence, with an index for each read (followers by
    /// app and position, catch-ups by app and signedDate, pruning by arrival). `notification_log_head` keeps the
    /// newest committed position, also after pruning, so `lastPosition` never goes back and never names a position
    /// a transaction still holds uncommitted (the sequence's own value would).
    static let notificationLog = PostgresMigration(
        version: 1, name: "notificationLog",
        statements: [
            """
            CREATE TABLE notifications(
              position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
              uuid text NOT NULL UNIQUE,
              signed_date bigint NOT NULL,
              received_at bigint NOT NULL,
              bundle_id text NOT NULL,
              environment text NOT NULL,
              notification_type text NOT NULL,
              subtype text NOT NULL,
              signed_payload text NOT NULL)
            """,
            "CREATE INDEX notifications_follow ON notifications(bundle_id, position)",
            "CREATE INDEX notifications_window ON notifications(bundle_id, signed_date, position)",
            "CREATE INDEX notifications_received ON notifications(received_at)",
            """
            CREATE TABLE notification_log_head(
              id integer PRIMARY KEY CHECK (id = 1),
              last_position bigint NOT NULL)
            """,
            "INSERT INTO notification_log_head(id, last_position) VALUES (1, 0)",
        ])
}
