import GatewayFoundation

/// Point lookups that callers on one loop issue in one pass of it, sent as one statement per shape: the
/// statement takes its shared parameters, then the keys as a `text[]` (`= ANY($n)`), and names each row's key
/// in its `keyColumn`; every caller gets the rows of its own key. A hundred readers of a hundred keys cost the
/// server one statement (one plan start, one index descent per key, one reply) instead of a hundred, and the
/// loop one pending call.
///
/// Confined to the pool's loop. A batch holds at most `maxKeys` distinct keys (more make more statements); a
/// caller's cancellation does not stop the statement it shares (the statement's timeout bounds its wait).
final class PostgresLookups: @unchecked Sendable {
    /// The most distinct keys one statement carries.
    static let maxKeys = 128

    typealias Answer = Result<[PostgresRow], PostgresError>

    private struct Shape: Hashable {
        var sql: String
        var shared: [PostgresValue?]
        var keyColumn: Int
    }

    private final class Batch {
        var keys: [String] = []
        var seen: Set<String> = []
        var waiters: [(key: String, continuation: CheckedContinuation<Answer, Never>)] = []
    }

    /// Sends a statement on one of the loop's connections, answering on the loop.
    typealias Send = (PostgresStatement, @escaping (CallResult) -> Void) -> Void

    private let loop: any IOLoop
    private let send: Send
    private var pending: [Shape: Batch] = [:]
    private var flushScheduled = false

    init(loop: any IOLoop, send: @escaping Send) {
        self.loop = loop
        self.send = send
    }

    /// Adds a caller's lookup to the batch of its shape; the batches leave once the loop has run what is queued now.
    func add(
        sql: String, shared: [PostgresValue?], keyColumn: Int, key: String,
        continuation: CheckedContinuation<Answer, Never>
    ) {
        precondition(IOLoops.current === loop, "a PostgreSQL lookup was batched off its event loop")
        let shape = Shape(sql: sql, shared: shared, keyColumn: keyColumn)
        let batch: Batch
        if let open = pending[shape], open.keys.count < Self.maxKeys || open.seen.contains(key) {
            batch = open
        } else {
            if let full = pending[shape] { run(full, shape) }
            batch = Batch()
            pending[shape] = batch
        }
        if batch.seen.insert(key).inserted { batch.keys.append(key) }
        batch.waiters.append((key, continuation))
        guard !flushScheduled else { return }
        flushScheduled = true
        let queued = loop.execute { [self] in
            flushScheduled = false
            let batches = pending
            pending = [:]
            for (shape, batch) in batches { run(batch, shape) }
        }
        if !queued {
            flushScheduled = false
            for (_, batch) in pending {
                for waiter in batch.waiters {
                    waiter.continuation.resume(returning: .failure(PostgresError(.closed, "the event loop stopped")))
                }
            }
            pending = [:]
        }
    }

    /// Sends `batch` as one statement and answers its callers from the result.
    private func run(_ batch: Batch, _ shape: Shape) {
        let waiters = batch.waiters
        send(.query(shape.sql, shape.shared + [.textArray(batch.keys)])) { result in
            switch result {
            case .failure(let error):
                for waiter in waiters { waiter.continuation.resume(returning: .failure(error)) }
            case .success(let rows):
                var byKey: [String: [PostgresRow]] = [:]
                for row in rows {
                    guard let key = try? row[shape.keyColumn].string() else { continue }
                    byKey[key, default: []].append(row)
                }
                for waiter in waiters { waiter.continuation.resume(returning: .success(byKey[waiter.key] ?? [])) }
            }
        }
    }
}
