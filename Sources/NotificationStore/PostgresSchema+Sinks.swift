extension PostgresSchema {
    /// Version 3: the sinks' progress, dead letters and leases.
    ///
    /// The sink tables are `SQLiteEventSinkStore`'s, column for column (positions and instants as `bigint`, a dead
    /// letter's body as `bytea`), so both stores keep the same rows. `fleet_leases` holds the once-per-fleet work's
    /// leases (`PostgresFleetLeases`): who holds each and until when, on the server's clock, so replicas whose
    /// clocks disagree still agree on who holds what.
    static let eventSinks = PostgresMigration(
        version: 3, name: "eventSinks",
        statements: [
            """
            CREATE TABLE event_sink_progress(
              kind text NOT NULL,
              sink text NOT NULL,
              through bigint NOT NULL,
              started_at bigint NOT NULL,
              PRIMARY KEY(kind, sink))
            """,
            """
            CREATE TABLE event_sink_settled(
              kind text NOT NULL,
              sink text NOT NULL,
              position bigint NOT NULL,
              PRIMARY KEY(kind, sink, position))
            """,
            """
            CREATE TABLE event_dead_letters(
              kind text NOT NULL,
              sink text NOT NULL,
              position bigint NOT NULL,
              event_id text NOT NULL,
              attempts bigint NOT NULL,
              first_attempt_at bigint NOT NULL,
              dead_at bigint NOT NULL,
              last_error text NOT NULL,
              body bytea NOT NULL,
              PRIMARY KEY(kind, sink, position))
            """,
            """
            CREATE TABLE fleet_leases(
              name text PRIMARY KEY,
              holder text NOT NULL,
              expires_at timestamptz NOT NULL,
              acquired_at timestamptz NOT NULL)
            """,
        ])
}
