import GatewayFoundation

/// Point lookups that callers on one loop issue in one pass of it, sent as one statement per shape: the
/// statement takes its shared parameters, then the keys as a `text[]`, and names each row's key in its
/// `keyColumn`; every caller gets the rows of its own key. A hundred readers of a hundred keys cost the server
/// one statement (one plan start, one reply) instead of a hundred, and the loop one pending call. Write the
/// statement as a lookup per key, `FROM unnest($n::text[]) AS k(id), LATERAL (SELECT … WHERE … = k.id LIMIT 1)`
/// (docs/postgres.md: `= ANY($n)` may be planned as a scan of the whole table).
///
/// Keys, statements and shared parameters are compared as PostgreSQL compares them, byte for byte (two spellings
/// of `é` are two keys). Confined to the pool's loop. A batch holds at most `maxKeys` distinct keys (more make more
/// statements). A caller that is cancelled is answered `.cancelled` at once, and the statement it shares goes on
/// for the others; a key PostgreSQL's text cannot hold (a NUL) is refused alone. The batch's statement fails all
/// of its callers together (a server error, its timeout, the connection lost, the pool's result bounds); lookups
/// still waiting when the loop stops are answered `.closed`.
final class PostgresLookups: @unchecked Sendable {
    /// The most distinct keys one statement carries.
    static let maxKeys = 128

    typealias Answer = Result<[PostgresRow], PostgresError>
    /// Sends a statement on one of the loop's connections, answering on the loop.
    typealias Send = (PostgresStatement, @escaping (CallResult) -> Void) -> Void

    /// One caller's lookup, answered once (by its batch, or by its cancellation). Loop-confined.
    final class Waiter: @unchecked Sendable {
        let key: [UInt8]
        private var continuation: CheckedContinuation<Answer, Never>?
        /// Cancelled before it was added: answered as soon as it is.
        private var cancelled = false

        init(key: String) { self.key = Array(key.utf8) }

        fileprivate func wait(on continuation: CheckedContinuation<Answer, Never>) -> Bool {
            self.continuation = continuation
            if cancelled { answer(.failure(PostgresError(.cancelled, "the caller was cancelled"))) }
            return !cancelled
        }

        func cancel() {
            cancelled = true
            answer(.failure(PostgresError(.cancelled, "the caller was cancelled")))
        }

        fileprivate func answer(_ answer: Answer) {
            guard let continuation else { return }
            self.continuation = nil
            continuation.resume(returning: answer)
        }
    }

    /// A statement and its shared parameters, compared by the bytes and types sent.
    private struct Shape: Hashable {
        struct Value: Hashable {
            var type: UInt32
            var format: Int32
            var bytes: [UInt8]?
        }
        var sql: [UInt8]
        var shared: [Value]
        var keyColumn: Int

        init(sql: String, shared: [PostgresValue?], keyColumn: Int) {
            self.sql = Array(sql.utf8)
            self.shared = shared.map { Value(type: $0?.typeOID ?? 0, format: $0?.format ?? 0, bytes: $0?.encoded) }
            self.keyColumn = keyColumn
        }
    }

    private final class Batch {
        let sql: String
        let shared: [PostgresValue?]
        var keys: [String] = []
        var seen: Set<[UInt8]> = []
        var waiters: [Waiter] = []

        init(sql: String, shared: [PostgresValue?]) {
            self.sql = sql
            self.shared = shared
        }
    }

    /// Answers what still waits when the loop lets go of it (the loop stopped).
    private final class LoopLease {
        weak var lookups: PostgresLookups?
        init(_ lookups: PostgresLookups) { self.lookups = lookups }
        deinit { lookups?.failPending(PostgresError(.closed, "the event loop stopped")) }
    }

    private let loop: any IOLoop
    private let send: Send
    private var pending: [Shape: Batch] = [:]
    private var flushScheduled = false
    /// The loop holds a `LoopLease` (from the first lookup on) until it stops.
    private var leased = false

    init(loop: any IOLoop, send: @escaping Send) {
        self.loop = loop
        self.send = send
    }

    private var leaseKey: ObjectIdentifier { ObjectIdentifier(self) }

    /// Adds `waiter`'s lookup to the batch of its shape; the batches leave once the loop has run what is queued now.
    func add(
        sql: String, shared: [PostgresValue?], keyColumn: Int, key: String, waiter: Waiter,
        continuation: CheckedContinuation<Answer, Never>
    ) {
        precondition(IOLoops.current === loop, "a PostgreSQL lookup was batched off its event loop")
        guard waiter.wait(on: continuation) else { return }
        guard !PostgresValue.holdsNUL(key) else {
            return waiter.answer(.failure(PostgresError(.invalidRequest, "a text parameter holds a NUL byte")))
        }
        let shape = Shape(sql: sql, shared: shared, keyColumn: keyColumn)
        let batch: Batch
        if let open = pending[shape], open.keys.count < Self.maxKeys || open.seen.contains(waiter.key) {
            batch = open
        } else {
            if let full = pending[shape] { run(full, keyColumn: keyColumn) }
            batch = Batch(sql: sql, shared: shared)
            pending[shape] = batch
        }
        if batch.seen.insert(waiter.key).inserted { batch.keys.append(key) }
        batch.waiters.append(waiter)
        guard !flushScheduled else { return }
        flushScheduled = true
        if !leased {
            leased = true
            loop.setLoopLocal(leaseKey, LoopLease(self))
        }
        let queued = loop.execute { [self] in
            flushScheduled = false
            let batches = pending
            pending = [:]
            for (shape, batch) in batches { run(batch, keyColumn: shape.keyColumn) }
        }
        if !queued { failPending(PostgresError(.closed, "the event loop stopped")) }
    }

    /// Answers every lookup not sent yet with `error`.
    private func failPending(_ error: PostgresError) {
        let batches = pending
        pending = [:]
        flushScheduled = false
        for batch in batches.values {
            for waiter in batch.waiters { waiter.answer(.failure(error)) }
        }
    }

    /// Sends `batch` as one statement and answers its callers from the result.
    private func run(_ batch: Batch, keyColumn: Int) {
        let waiters = batch.waiters
        send(.query(batch.sql, batch.shared + [.textArray(batch.keys)])) { result in
            switch result {
            case .failure(let error):
                for waiter in waiters { waiter.answer(.failure(error)) }
            case .success(let rows):
                var byKey: [[UInt8]: [PostgresRow]] = [:]
                for row in rows {
                    guard let key = row[keyColumn].bytes else { continue }
                    byKey[Array(key), default: []].append(row)
                }
                for waiter in waiters { waiter.answer(.success(byKey[waiter.key] ?? [])) }
            }
        }
    }
}
