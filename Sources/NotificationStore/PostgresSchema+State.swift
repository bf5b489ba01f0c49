extension PostgresSchema {
    /// Version 2: the subscription state, its ledger and event outbox.
    static let subscriptionState = PostgresMigration(version: 2, name: "subscriptionState", statements: [])
}
