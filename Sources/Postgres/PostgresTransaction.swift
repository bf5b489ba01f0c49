/// The statements of one transaction (`PostgresConnection.transaction`): run in order on the connection that
/// began it, with nobody else's statements between them. Only valid inside the transaction's body; after a lost
/// connection every statement fails `.connectionLost` (the server rolled the transaction back).
package final class PostgresTransaction: Sendable {
    let connection: PostgresConnection
    let id: Int
    let generation: Int

    init(connection: PostgresConnection, id: Int, generation: Int) {
        self.connection = connection
        self.id = id
        self.generation = generation
    }

    /// Runs `sql` with `parameters` inside the transaction.
    package func query(
        _ sql: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await connection.call(.query(sql, parameters), role: .inside(id), timeout: timeout, generation: generation)
    }

    /// Runs `queries` in order inside the transaction, sent together (one round trip for all of them), and
    /// returns their rows in that order once every one is answered; fails with the first failure among them (a
    /// statement after a failed one fails too: the transaction is aborted).
    package func queries(_ queries: [PostgresQuery], timeout: Duration? = nil) async throws(PostgresError)
        -> [PostgresRows]
    {
        let results = await connection.calls(
            queries.map { .query($0.sql, $0.parameters) }, as: .each(.inside(id)), timeout: timeout,
            generation: generation)
        return try results.map { result throws(PostgresError) in try result.get() }
    }

    /// Runs the prepared statement `name` inside the transaction.
    package func execute(
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

/// A statement and its parameters, one of several sent together (`PostgresTransaction.queries`).
package struct PostgresQuery: Sendable {
    package var sql: String
    package var parameters: [PostgresValue?]

    package init(_ sql: String, _ parameters: [PostgresValue?] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}
