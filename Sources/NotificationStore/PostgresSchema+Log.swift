extension PostgresSchema {
    /// Version 1: the notification log.
    static let notificationLog = PostgresMigration(version: 1, name: "notificationLog", statements: [])
}
