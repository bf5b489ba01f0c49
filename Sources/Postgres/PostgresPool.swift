import GatewayFoundation

/// A few connections on one event loop, for that loop's callers: each statement goes to the least busy
/// connection that is up (fewest statements in flight or waiting; one in a transaction counts as busy), so a
/// slow statement or a transaction holds up one connection, not the loop's callers. Size it from the server's
/// `max_connections`: replicas × loops per replica × pool size must stay under it (docs/postgres.md).
package final class PostgresPool: Sendable {
    package let loop: any IOLoop
    /// The connections, made on `loop` (their order is fixed: notifications come through the first).
    package let connections: [PostgresConnection]
    /// The lookups batched on the loop (`lookup`).
    private let lookups: PostgresLookups

    private init(loop: any IOLoop, connections: [PostgresConnection]) {
        self.loop = loop
        self.connections = connections
        lookups = PostgresLookups(loop: loop) { statement, respond in
            Self.pick(connections).submitShared(statement, timeout: nil, respond: respond)
        }
    }

    /// Opens `size` connections on `loop` at once; fails (closing those that opened) when any first attempt
    /// fails. Each connection is replaced on its own when it breaks.
    package static func connect(
        _ configuration: PostgresConfiguration, on loop: any IOLoop, size: Int, metrics: PostgresMetrics? = nil,
        onEvent: (@Sendable (PostgresConnectionEvent) -> Void)? = nil
    ) async throws(PostgresError) -> PostgresPool {
        let results = await withTaskGroup(of: Result<PostgresConnection, PostgresError>.self) { group in
            for _ in 0..<max(1, size) {
                group.addTask {
                    do throws(PostgresError) {
                        return .success(
                            try await PostgresConnection.connect(
                                configuration, on: loop, metrics: metrics, onEvent: onEvent))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var results: [Result<PostgresConnection, PostgresError>] = []
            for await result in group { results.append(result) }
            return results
        }
        var connections: [PostgresConnection] = []
        var failure: PostgresError?
        for result in results {
            switch result {
            case .success(let connection): connections.append(connection)
            case .failure(let error): failure = failure ?? error
            }
        }
        if let failure {
            for connection in connections { await connection.close() }
            throw failure
        }
        return PostgresPool(loop: loop, connections: connections)
    }

    /// Runs `sql` on the least busy connection.
    package func query(
        _ sql: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await leastBusy().query(sql, parameters, timeout: timeout)
    }

    /// The rows of `key` from a statement many callers on this loop share (`PostgresLookups`): `sql` takes
    /// `shared`, then the keys of every lookup of the same shape issued in this pass of the loop as a `text[]`,
    /// and returns each row's key in column `keyColumn` (write it as a `LATERAL` lookup per key of
    /// `unnest($n::text[])`, docs/postgres.md). No row: an empty answer. One statement, so the rows of one key are
    /// one snapshot. A cancelled caller is answered `.cancelled` at once; the statement goes on for the others.
    package func lookup(
        _ sql: String, shared: [PostgresValue?] = [], key: String, keyColumn: Int = 0
    ) async throws(PostgresError) -> [PostgresRow] {
        let lookups = lookups
        let loop = loop
        let waiter = PostgresLookups.Waiter(key: key)
        let answer = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PostgresLookups.Answer, Never>) in
                let add: @Sendable () -> Void = {
                    lookups.add(
                        sql: sql, shared: shared, keyColumn: keyColumn, key: key, waiter: waiter,
                        continuation: continuation)
                }
                if IOLoops.current === loop {
                    add()
                } else if !loop.execute(add) {
                    continuation.resume(returning: .failure(PostgresError(.closed, "the event loop stopped")))
                }
            }
        } onCancel: {
            if IOLoops.current === loop {
                waiter.cancel()
            } else {
                loop.execute { waiter.cancel() }
            }
        }
        return try answer.get()
    }

    /// Prepares `sql` as `name` on every connection (each prepares it on the server before its first use there;
    /// the least busy one at once, so an error in the statement is this call's).
    package func prepare(_ name: String, _ sql: String, timeout: Duration? = nil) async throws(PostgresError) {
        let first = await leastBusy()
        try await first.prepare(name, sql, timeout: timeout)
        for connection in connections where connection !== first { await connection.register(prepared: name, sql) }
    }

    /// Runs the prepared statement `name` on the least busy connection.
    package func execute(
        prepared name: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await leastBusy().execute(prepared: name, parameters, timeout: timeout)
    }

    /// Runs `body` as a transaction on the least busy connection (`PostgresConnection.transaction`).
    package func transaction<T>(_ body: (PostgresTransaction) async throws -> T) async throws -> T {
        try await leastBusy().transaction(body)
    }

    /// Runs `queries` as one transaction sent whole on the least busy connection
    /// (`PostgresConnection.transaction(_:timeout:)`: one round trip).
    package func transaction(_ queries: [PostgresQuery], timeout: Duration? = nil) async throws(PostgresError)
        -> [PostgresRows]
    {
        try await leastBusy().transaction(queries, timeout: timeout)
    }

    /// Subscribes to `channel` on the first connection (`PostgresConnection.listen`).
    package func listen(_ channel: String) async throws(PostgresError) -> AsyncStream<PostgresListenEvent> {
        try await connections[0].listen(channel)
    }

    /// Closes every connection.
    package func close() async {
        for connection in connections { await connection.close() }
    }

    /// The connection to use now: the least loaded of those up, else the first (whose call then fails fast).
    private func leastBusy() async -> PostgresConnection {
        let connections = connections
        if IOLoops.current === loop { return Self.pick(connections) }
        return await withCheckedContinuation { (continuation: CheckedContinuation<PostgresConnection, Never>) in
            if !loop.execute({ continuation.resume(returning: Self.pick(connections)) }) {
                continuation.resume(returning: connections[0])
            }
        }
    }

    private static func pick(_ connections: [PostgresConnection]) -> PostgresConnection {
        var best = connections[0]
        var bestLoad = Int.max
        for connection in connections where connection.connected {
            let load = connection.load
            if load < bestLoad {
                best = connection
                bestLoad = load
            }
        }
        return best
    }
}
