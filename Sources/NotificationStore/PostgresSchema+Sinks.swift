extension PostgresSchema {
    /// Version 3: the sinks' progress, dead letters and leases.
    static let eventSinks = PostgresMigration(version: 3, name: "eventSinks", statements: [])
}
