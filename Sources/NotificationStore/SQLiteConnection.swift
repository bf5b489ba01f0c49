import Dispatch

/// One SQLite connection and the serial queue (its own thread) that every statement on it runs on: the
/// connection is confined to the queue, and callers wait for their work without blocking an event loop.
final class SQLiteConnection: @unchecked Sendable {
    // @unchecked: `database` is touched only on `queue`.
    private let queue: DispatchQueue
    private let database: SQLiteDatabase

    /// Confines `database` to a new queue named `label`.
    init(_ database: SQLiteDatabase, label: String) {
        self.queue = DispatchQueue(label: label)
        self.database = database
    }

    /// Runs `work` on the queue and returns what it returned or threw.
    func run<Value: Sendable>(
        _ work: @escaping @Sendable (SQLiteDatabase) throws(NotificationStoreFailure) -> Value
    )
        async throws(NotificationStoreFailure) -> Value
    {
        let database = UncheckedDatabase(database)
        let result: Result<Value, NotificationStoreFailure> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(NotificationStoreFailure) {
                    continuation.resume(returning: .success(try work(database.value)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Runs `work` on the queue later, without waiting for it.
    func submit(_ work: @escaping @Sendable (SQLiteDatabase) -> Void) {
        let database = UncheckedDatabase(database)
        queue.async { work(database.value) }
    }
}

/// Carries the queue-confined database into the queue's closure.
private struct UncheckedDatabase: @unchecked Sendable {
    let value: SQLiteDatabase
    init(_ value: SQLiteDatabase) { self.value = value }
}
