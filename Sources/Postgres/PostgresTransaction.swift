/// The statements of one transaction (`PostgresConnection.transaction`): run in order on the connection that
/// began it, with nobody else's statements between them. Only valid inside the transaction's body; after a lost
/// connection every statement fails `.connectionLost` (the server rolled the transaction back).
public final class PostgresTransaction: Sendable {
    let connection: PostgresConnection
    let id: Int
    let generation: Int

    init(connection: PostgresConnection, id: Int, generation: Int) {
        self.connection = connection
        self.id = id
        self.generation = generation
    }

    /// Runs `sql` with `parameters` inside the transaction.
    public func query(
        _ sql: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await connection.call(.query(sql, parameters), role: .inside(id), timeout: timeout, generation: generation)
    }

    /// Runs the prepared statement `name` inside the transaction.
    public func execute(
        prepared name: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await connection.call(
            .executePrepared(name: name, parameters), role: .inside(id), timeout: timeout, generation: generation)
    }

    /// Ends the transaction with ROLLBACK (nothing is sent when it never began or has ended); not cancellable.
    func rollback() async {
        _ = try? await connection.call(
            .query("ROLLBACK", []), role: .end(id), timeout: nil, generation: generation, cancellable: false)
    }
}
