internal import CLibPQ
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// What happened to a connection, for its owner's log (the configuration's `description` names it without its
/// password).
package enum PostgresConnectionEvent: Sendable {
    /// A connection was established (`reconnect`: it replaces one that was lost).
    case connected(reconnect: Bool)
    /// An attempt to replace a lost connection failed; the next one follows `retryIn` later.
    case attemptFailed(PostgresError, retryIn: Duration)
    /// The established connection broke; its calls in flight failed with `.connectionLost`.
    case lost(PostgresError)
}

/// What a connection has done, for tests and diagnostics.
package struct PostgresConnectionStatistics: Sendable, Hashable {
    /// Connections established (the first included).
    package var connects = 0
    /// Established connections that broke.
    package var losses = 0
    /// Statements sent to the server.
    package var statementsSent = 0
    /// The most statements in flight at once (sent, not yet answered): pipelining at work.
    package var mostInFlight = 0
    /// Cancel requests sent to the server (deadlines, cancelled callers, results past their bounds).
    package var cancelRequests = 0
}

/// One libpq connection driven by one event loop, as the Apple client's libcurl handles are: libpq is
/// non-blocking (`PQconnectStartParams` and `PQconnectPoll` to connect, `PQsetnonblocking`), the loop watches
/// `PQsocket` and calls back on readiness (`PQconsumeInput`, `PQisBusy`, `PQgetResult` on readable, `PQflush` on
/// writable), and every deadline is a loop timer, so no call ever blocks the loop's thread (host names are
/// resolved on a thread of their own, cancel requests sent from one).
///
/// The connection runs in pipeline mode: each statement is sent at once with its own sync point (so it runs in
/// an implicit transaction of its own and an error touches no other statement), and its results come back in
/// order, so many callers' statements share round trips. Results are read row by row (single-row mode) within
/// `PostgresResultLimits`.
///
/// A broken connection is replaced with backoff (`PostgresBackoff`) by the same object; calls in flight fail
/// `.connectionLost`, calls issued while it is down fail `.notConnected` at once (nothing is queued for later:
/// callers decide). Prepared statements are re-prepared and LISTENs re-issued on the new connection.
///
/// Its state is confined to its loop: every entry point hands over to the loop (or runs there directly when called
/// on it), and every internal step checks it runs there, in release builds too.
package final class PostgresConnection: @unchecked Sendable {
    package let configuration: PostgresConfiguration
    package let loop: any IOLoop
    private let metrics: PostgresMetrics?
    private let onEvent: (@Sendable (PostgresConnectionEvent) -> Void)?

    private enum State {
        /// Not started, or between attempts.
        case idle
        /// Resolving host names off the loop.
        case resolving
        /// `PQconnectPoll` in progress.
        case connecting(OpaquePointer)
        case connected(OpaquePointer)
        case closed
    }

    private var state = State.idle
    /// Who watches the socket (an object of its own: `close` may run from `deinit`).
    private let watchOwner = WatchOwner()
    private var watchedSocket: Int32 = -1
    private var watchedInterest: IOInterest = []
    /// libpq has output it could not write yet.
    private var outputPending = false
    private var connectTimer: IOLoopTimer?
    private var retryTimer: IOLoopTimer?
    /// Failed attempts since the connection was last up.
    private var failures = 0
    /// Whether a connection was ever established (later ones are reconnects).
    private var everConnected = false
    /// The caller of `connect` while the first attempt runs.
    private var starter: CheckedContinuation<Result<Void, PostgresError>, Never>?
    /// Counts connections: a transaction belongs to the one it began on.
    private(set) var generation = 0

    /// Statements sent, with a sync after each, in the order their results come.
    private var sent: [SentItem] = []
    private var sentHead = 0
    /// Calls held back while another caller's transaction owns the connection.
    private var waiting: [PendingCall] = []
    /// The transaction whose statements alone are sent now.
    private var activeTransaction: Int?
    private var lastTransaction = 0

    /// Prepared statements by name (kept across reconnects), and those this server session has.
    private var prepared: [String: PreparedText] = [:]
    private var preparedInSession: [String: PreparedText] = [:]
    /// The names under which statements with parameters run (`cached(_:)`), by their text and types.
    private var statementCache: [PreparedText: String] = [:]
    /// A write of what libpq holds is queued on the loop (`scheduleFlush`).
    private var flushScheduled = false

    /// Notification subscribers by channel.
    private var subscribers: [String: [Int: AsyncStream<PostgresListenEvent>.Continuation]] = [:]
    private var lastSubscriber = 0

    /// `drain` is running (it is not entered again from inside itself).
    private var draining = false
    private var cancelRunning = false
    /// When this connection last asked the server to cancel a statement.
    private var lastCancelAt: MonotonicInstant?
    private var cancelAgain = false
    private var stats = PostgresConnectionStatistics()

    private enum SentItem {
        case call(PendingCall)
        case sync
    }

    private final class WatchOwner: Sendable {}

    /// The connection's hold on its loop, kept there as a loop-local value (keyed by its `watchOwner`) from its
    /// start until it closes. A loop that stops lets go of it, which closes the connection there as its owner's
    /// `close` would: the caller waiting for the first connection, the calls in flight or waiting and the
    /// subscriptions are answered `.closed`, so nothing waits for good on a loop nobody runs.
    private final class LoopLease {
        weak var connection: PostgresConnection?
        init(_ connection: PostgresConnection) { self.connection = connection }
        deinit { connection?.shutDown(PostgresError(.closed, "the event loop stopped")) }
    }

    private var leaseKey: ObjectIdentifier { ObjectIdentifier(watchOwner) }

    init(
        configuration: PostgresConfiguration, loop: any IOLoop, metrics: PostgresMetrics?,
        onEvent: (@Sendable (PostgresConnectionEvent) -> Void)?
    ) {
        self.configuration = configuration
        self.loop = loop
        self.metrics = metrics
        self.onEvent = onEvent
    }

    deinit {
        // Only a connection its owner did not close gets here with subscribers or a handle: the subscriptions
        // end, and libpq's connection is finished on the loop (which may still watch its socket), or here once
        // the loop has stopped.
        for continuation in subscribers.values.flatMap(\.values) { continuation.finish() }
        let handle: OpaquePointer?
        switch state {
        case .connecting(let connection), .connected(let connection): handle = connection
        default: handle = nil
        }
        guard let handle else { return }
        let loop = loop
        let owner = watchOwner
        let socket = watchedSocket
        let finish = FinishHandOver(handle)
        if !loop.execute({
            if socket >= 0 { loop.unwatch(fd: socket, owner: owner) }
            loop.setLoopLocal(ObjectIdentifier(owner), nil)
            finish.finish()
        }) {
            finish.finish()
        }
    }

    /// Connects on `loop` and returns once the first attempt succeeded; `.refused` (or `.invalidURI`) when it
    /// failed, and nothing is retried then. From then on a lost connection is replaced in the background.
    package static func connect(
        _ configuration: PostgresConfiguration, on loop: any IOLoop, metrics: PostgresMetrics? = nil,
        onEvent: (@Sendable (PostgresConnectionEvent) -> Void)? = nil
    ) async throws(PostgresError) -> PostgresConnection {
        let connection = PostgresConnection(
            configuration: configuration, loop: loop, metrics: metrics, onEvent: onEvent)
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Void, PostgresError>, Never>) in
            let start: @Sendable () -> Void = { connection.start(continuation) }
            if IOLoops.current === loop {
                start()
            } else if !loop.execute(start) {
                continuation.resume(returning: .failure(PostgresError(.closed, "the event loop stopped")))
            }
        }
        try result.get()
        return connection
    }

    // MARK: Calls

    /// Runs `sql` with `parameters` (`$1`, `$2`, …; nil is NULL) and returns its rows, by `timeout` after the call
    /// (the configuration's `queryTimeout` by default).
    package func query(
        _ sql: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await call(.query(sql, parameters), role: .none, timeout: timeout)
    }

    /// Prepares `sql` as the statement `name` on the server, kept for the connection's life: it is prepared
    /// again on a replacing connection before its next use. Preparing a name again replaces its statement.
    /// (`query` prepares statements with parameters on its own; this names one explicitly.)
    package func prepare(_ name: String, _ sql: String, timeout: Duration? = nil) async throws(PostgresError) {
        _ = try await call(.prepare(name: name, sql: sql), role: .none, timeout: timeout)
    }

    /// Runs the prepared statement `name` with `parameters`.
    package func execute(
        prepared name: String, _ parameters: [PostgresValue?] = [], timeout: Duration? = nil
    ) async throws(PostgresError) -> PostgresRows {
        try await call(.executePrepared(name: name, parameters), role: .none, timeout: timeout)
    }

    /// Runs `body` in a transaction: `BEGIN`, the statements `body` issues through its `PostgresTransaction` in
    /// order, then `COMMIT`; `ROLLBACK` when `body` throws (its error is rethrown) or a statement fails. While it
    /// runs the connection sends no other caller's statements (they wait, within their deadlines), so keep it
    /// short; a pool sends them to its other connections.
    ///
    /// A transaction that failed because the plan of a statement the connection had prepared went stale (a
    /// column's type changed under it: a newer replica's migration, an administrator) runs once more, its
    /// statements prepared again: keep `body` free of effects outside the transaction.
    package func transaction<T>(
        _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        do {
            return try await transactionOnce(body)
        } catch let error as PostgresError where error.isStalePlan {
            return try await transactionOnce(body)
        }
    }

    private func transactionOnce<T>(
        _ body: (PostgresTransaction) async throws -> T
    ) async throws -> T {
        let transaction = try await begin()
        let value: T
        do {
            value = try await body(transaction)
        } catch {
            await transaction.rollback()
            throw error
        }
        do {
            _ = try await call(.query("COMMIT", []), role: .end(transaction.id), timeout: nil)
        } catch {
            await transaction.rollback()
            throw error
        }
        return value
    }

    /// Runs `queries` as one transaction sent whole: `BEGIN`, the statements and `COMMIT` leave together and come
    /// back together, one round trip for all of it (`transaction(_:)` waits for each statement before the next, for
    /// a body that decides as it goes). Returns each statement's rows in order; fails with the first failure among
    /// them, and then nothing of it was committed (a statement after a failed one is not run, and the COMMIT of an
    /// aborted transaction rolls it back). Run once more when a prepared statement's plan went stale.
    package func transaction(_ queries: [PostgresQuery], timeout: Duration? = nil) async throws(PostgresError)
        -> [PostgresRows]
    {
        do {
            return try await transactionSentWhole(queries, timeout: timeout)
        } catch  where error.isStalePlan {
            return try await transactionSentWhole(queries, timeout: timeout)
        }
    }

    private func transactionSentWhole(_ queries: [PostgresQuery], timeout: Duration?) async throws(PostgresError)
        -> [PostgresRows]
    {
        if queries.isEmpty { return [] }
        let statements: [PostgresStatement] =
            [.query("BEGIN", [])] + queries.map { .query($0.sql, $0.parameters) } + [.query("COMMIT", [])]
        let results = await calls(statements, as: .wholeTransaction, timeout: timeout)
        var rows: [PostgresRows] = []
        rows.reserveCapacity(queries.count)
        for (index, result) in results.enumerated() {
            let value = try result.get()
            if index == results.count - 1 {
                guard value.commandTag == "COMMIT" else {
                    throw PostgresError(.server, "the transaction was rolled back (\(value.commandTag))")
                }
            } else if index > 0 {
                rows.append(value)
            }
        }
        return rows
    }

    /// Subscribes to notifications on `channel` (`LISTEN`) and returns once the server listens: each `NOTIFY`
    /// on it (from any session) is an element, and `.resubscribed` follows every reconnect (notifications sent
    /// while the connection was down are lost: re-read what they would have announced). Ending the iteration
    /// unsubscribes; the last subscriber of a channel ends its `LISTEN`.
    package func listen(_ channel: String) async throws(PostgresError) -> AsyncStream<PostgresListenEvent> {
        guard let quoted = Self.quotedIdentifier(channel) else {
            throw PostgresError(.invalidRequest, "a channel name must be 1 to 63 bytes without NUL")
        }
        _ = try await call(.query("LISTEN \(quoted)", []), role: .none, timeout: nil)
        let (stream, continuation) = AsyncStream<PostgresListenEvent>.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, configuration.notificationBuffer)))
        let added: Bool = await onLoop { connection in connection.subscribe(channel, continuation) } ?? false
        if !added { continuation.finish() }
        return stream
    }

    /// Closes the connection: calls in flight or waiting fail `.closed`, subscriptions end, nothing reconnects.
    /// Idempotent.
    package func close() async {
        _ = await onLoop { connection in connection.shutDown() }
    }

    /// What the connection has done so far.
    package func statistics() async -> PostgresConnectionStatistics {
        await onLoop { $0.stats } ?? PostgresConnectionStatistics()
    }

    /// Whether the connection is up now.
    package func isConnected() async -> Bool {
        await onLoop { $0.connected } ?? false
    }

    /// Records `sql` as the prepared statement `name` without preparing it now: it is prepared on the server
    /// before its first use (a pool's other connections).
    func register(prepared name: String, _ sql: String) async {
        _ = await onLoop { connection in
            connection.prepared[name] = PreparedText(sql: sql)
        }
    }

    /// Statements sent or waiting (on the loop only): what a pool compares.
    var load: Int {
        checkLoop()
        let inFlight = (sent.count - sentHead) / 2
        return inFlight + waiting.count + (activeTransaction == nil ? 0 : 1_000)
    }

    var connected: Bool {
        checkLoop()
        if case .connected = state { return true }
        return false
    }

    /// Runs `body` with the connection on its loop and returns its value; nil when the loop has stopped.
    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) -> T) async -> T? {
        if IOLoops.current === loop { return body(self) }
        return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            if !loop.execute({ continuation.resume(returning: body(self)) }) {
                continuation.resume(returning: nil)
            }
        }
    }

    /// Starts a transaction: its `BEGIN` sent once no other transaction owns the connection.
    private func begin() async throws(PostgresError) -> PostgresTransaction {
        let (id, generation) =
            await onLoop { connection -> (Int, Int) in
                connection.lastTransaction += 1
                return (connection.lastTransaction, connection.generation)
            } ?? (0, 0)
        let transaction = PostgresTransaction(connection: self, id: id, generation: generation)
        do {
            _ = try await call(.query("BEGIN", []), role: .begin(id), timeout: nil)
        } catch {
            await transaction.rollback()
            throw error
        }
        return transaction
    }

    /// Runs `statements` in order, handed to the loop together and written out together (pipelined: one round
    /// trip for all of them), and returns every answer in that order once all are answered. A cancellation
    /// abandons all of them.
    func calls(
        _ statements: [PostgresStatement], as batchRole: BatchRole, timeout: Duration?, generation: Int? = nil
    ) async -> [CallResult] {
        if statements.isEmpty { return [] }
        let ticket = CallTicket()
        let loop = loop
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[CallResult], Never>) in
                let submit: @Sendable () -> Void = {
                    let answers = BatchAnswers(count: statements.count, continuation: continuation)
                    if case .wholeTransaction = batchRole { self.lastTransaction += 1 }
                    let id = self.lastTransaction
                    for (index, statement) in statements.enumerated() {
                        let role = batchRole.role(ofStatement: index, count: statements.count, transaction: id)
                        let call = PendingCall(
                            self.cached(statement), role: role, limits: self.configuration.limits, ticket: ticket
                        ) { answers.answer(index, $0) }
                        self.submit(call, timeout: timeout ?? self.configuration.queryTimeout, generation: generation)
                    }
                }
                if IOLoops.current === loop {
                    submit()
                } else if !loop.execute(submit) {
                    continuation.resume(
                        returning: statements.map { _ in .failure(PostgresError(.closed, "the event loop stopped")) })
                }
            }
        } onCancel: {
            ticket.cancel()
            loop.execute { self.cancel(ticket) }
        }
    }

    /// Runs one statement: handed to the loop, answered from there.
    func call(
        _ statement: PostgresStatement, role: TransactionRole, timeout: Duration?, generation: Int? = nil,
        cancellable: Bool = true
    ) async throws(PostgresError) -> PostgresRows {
        let ticket = cancellable ? CallTicket() : nil
        let loop = loop
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<CallResult, Never>) in
                let submit: @Sendable () -> Void = {
                    let call = PendingCall(
                        self.cached(statement), role: role, limits: self.configuration.limits, ticket: ticket,
                        continuation: continuation)
                    self.submit(call, timeout: timeout ?? self.configuration.queryTimeout, generation: generation)
                }
                if IOLoops.current === loop {
                    submit()
                } else if !loop.execute(submit) {
                    continuation.resume(returning: .failure(PostgresError(.closed, "the event loop stopped")))
                }
            }
        } onCancel: {
            guard let ticket else { return }
            ticket.cancel()
            loop.execute { self.cancel(ticket) }
        }
        return try result.get()
    }

    // MARK: On the loop: submitting

    /// Sends `statement` from the loop (outside any transaction), answering through `respond` on the loop: a
    /// statement several callers share (`PostgresPool.lookup`).
    func submitShared(_ statement: PostgresStatement, timeout: Duration?, respond: @escaping (CallResult) -> Void) {
        checkLoop()
        let call = PendingCall(
            cached(statement), role: .none, limits: configuration.limits, ticket: nil, respond: respond)
        submit(call, timeout: timeout ?? configuration.queryTimeout, generation: nil)
    }

    /// How many times a call outside a transaction is sent again after a stale plan or a stray cancel.
    static let mostResends = 3

    /// Most statements one connection keeps prepared for `cached(_:)`; later ones run unprepared.
    static let statementCacheLimit = 256
    /// Statements with more parameters run unprepared: such a statement is usually one of many shapes (a multi-row
    /// insert, one per row count) whose one parse serves all its rows.
    static let cachedParameterLimit = 32

    /// `statement` as it is sent: a query with parameters (at most `cachedParameterLimit`) runs as a statement this
    /// connection prepares on its first use (the server parses and plans it once, not per call), named by its text
    /// and its parameters' types; anything else, or once `statementCacheLimit` are prepared, as it is.
    private func cached(_ statement: PostgresStatement) -> PostgresStatement {
        checkLoop()
        guard case .query(let sql, let parameters) = statement, !parameters.isEmpty,
            parameters.count <= Self.cachedParameterLimit
        else { return statement }
        let text = PreparedText(sql: sql, types: parameters.map { $0?.typeOID ?? 0 })
        if let name = statementCache[text] { return .executePrepared(name: name, parameters) }
        guard statementCache.count < Self.statementCacheLimit, !PostgresValue.holdsNUL(sql) else { return statement }
        let name = "appstore_gateway_\(statementCache.count + 1)"
        statementCache[text] = name
        prepared[name] = text
        return .executePrepared(name: name, parameters)
    }

    @inline(__always)
    private func checkLoop() {
        precondition(IOLoops.current === loop, "a PostgreSQL connection was used off its event loop")
    }

    private func submit(_ call: PendingCall, timeout: Duration, generation: Int?) {
        checkLoop()
        if call.ticket?.isCancelled == true {
            return fail(call, PostgresError(.cancelled, "cancelled before it was sent"))
        }
        guard connected else {
            if case .closed = state { return fail(call, PostgresError(.closed, "the connection is closed")) }
            return fail(call, PostgresError(.notConnected, "not connected to PostgreSQL (reconnecting)"))
        }
        if let generation, generation != self.generation {
            return fail(call, PostgresError(.connectionLost, "the transaction's connection was lost"))
        }
        switch call.role {
        case .inside(let id), .end(let id):
            // Its BEGIN waits (a transaction sent whole): so does it, behind it.
            if activeTransaction != id, waiting.contains(where: { $0.role.transaction == id }) {
                arm(call, timeout: timeout)
                waiting.append(call)
                return
            }
            guard activeTransaction == id else {
                if case .end = call.role {
                    return call.answer(.success(RowsBuilder(limits: call.builder.limits).finish()))
                }
                return fail(call, PostgresError(.invalidRequest, "the transaction is over"))
            }
        case .none, .begin:
            if activeTransaction != nil || !waiting.isEmpty {
                arm(call, timeout: timeout)
                waiting.append(call)
                return
            }
        }
        arm(call, timeout: timeout)
        send(call)
    }

    private func arm(_ call: PendingCall, timeout: Duration) {
        call.timer = loop.scheduleTimer(after: max(.zero, timeout)) { [weak self, weak call] in
            guard let self, let call else { return }
            call.timer = nil
            self.abandon(call, PostgresError(.timeout, "no answer within \(timeout)"))
        }
    }

    /// Answers `call` with `error` and counts it.
    private func fail(_ call: PendingCall, _ error: PostgresError) {
        if let timer = call.timer { loop.cancelTimer(timer) }
        call.timer = nil
        if !call.isAnswered { metrics?.failed(error) }
        call.answer(.failure(error))
    }

    /// Answers a call that is still running with `error`: one waiting is dropped, one sent has its results
    /// discarded and is cancelled on the server when it runs there.
    private func abandon(_ call: PendingCall, _ error: PostgresError) {
        guard !call.isAnswered else { return }
        fail(call, error)
        if let index = waiting.firstIndex(where: { $0 === call }) {
            waiting.remove(at: index)
            // A transaction that waits whole (its BEGIN not sent) is given up whole: a COMMIT left behind alone would
            // never be sent, and its statements would run outside it.
            if let id = call.role.transaction, activeTransaction != id {
                let rest = waiting.filter { $0.role.transaction == id }
                waiting.removeAll { $0.role.transaction == id }
                for other in rest { fail(other, error) }
            }
            return
        }
        // A COMMIT or ROLLBACK is left to finish: cancelled, it could leave the session inside the transaction.
        if case .end = call.role { return }
        if case .call(let current)? = currentItem, current === call {
            requestCancel()
        } else {
            call.cancelWhenCurrent = true
        }
    }

    private func cancel(_ ticket: CallTicket) {
        checkLoop()
        let all =
            waiting
            + sent[sentHead...].compactMap { item -> PendingCall? in
                if case .call(let call) = item { return call }
                return nil
            }
        // A batch's calls share one ticket: every one of them is abandoned.
        for call in all where call.ticket === ticket {
            abandon(call, PostgresError(.cancelled, "the caller was cancelled"))
        }
    }

    /// Sends `call` (and, for a prepared statement this session lacks, its prepare first), each with a sync.
    private func send(_ call: PendingCall) {
        guard case .connected(let connection) = state else {
            return fail(call, PostgresError(.notConnected, "not connected to PostgreSQL"))
        }
        switch call.statement {
        case .executePrepared(let name, _):
            guard let text = prepared[name] else {
                return fail(call, PostgresError(.invalidRequest, "no statement was prepared as \(name)"))
            }
            if preparedInSession[name] != text {
                let preparation = PendingCall(
                    .prepare(name: name, sql: text.sql, types: text.types), role: .none, limits: call.builder.limits,
                    ticket: nil,
                    continuation: nil)
                call.preparation = preparation
                guard replacePrepared(name, with: preparation, on: connection) else { return }
            }
        case .prepare(let name, let sql, let types):
            let text = PreparedText(sql: sql, types: types)
            prepared[name] = text
            // The same statement again costs nothing; another one under the name replaces it.
            if preparedInSession[name] == text {
                if let timer = call.timer { loop.cancelTimer(timer) }
                call.timer = nil
                return call.answer(.success(RowsBuilder(limits: call.builder.limits).finish()))
            }
            _ = replacePrepared(name, with: call, on: connection)
            scheduleFlush()
            return
        case .query:
            break
        }
        if case .begin(let id) = call.role { activeTransaction = id }
        guard sendOne(call, on: connection) else { return }
        if case .end = call.role {
            activeTransaction = nil
            sendWaiting()
        }
        scheduleFlush()
    }

    /// Writes what libpq holds once the loop has run the work queued now: the statements its callers issue meanwhile
    /// (many calls served in one pass, a batch) leave in one write, not one each.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        let queued = loop.execute { [self] in
            flushScheduled = false
            flush()
            drain()
        }
        if !queued {
            flushScheduled = false
            flush()
            drain()
        }
    }

    /// Sends the prepare `preparation` of `name`, after a DEALLOCATE of the statement this session has under the
    /// name, if any; false when the connection broke doing so.
    private func replacePrepared(_ name: String, with preparation: PendingCall, on connection: OpaquePointer) -> Bool {
        if preparedInSession[name] != nil {
            guard let quoted = Self.quotedIdentifier(name) else {
                fail(preparation, PostgresError(.invalidRequest, "a statement name must be 1 to 63 bytes"))
                return true
            }
            let deallocation = PendingCall(
                .query("DEALLOCATE \(quoted)", []), role: .none, limits: preparation.builder.limits, ticket: nil,
                continuation: nil)
            preparedInSession[name] = nil
            guard sendOne(deallocation, on: connection) else { return false }
        }
        return sendOne(preparation, on: connection)
    }

    /// Hands one statement and a sync to libpq; false when the connection broke doing so.
    private func sendOne(_ call: PendingCall, on connection: OpaquePointer) -> Bool {
        let accepted: Int32
        switch call.statement {
        case .query(let sql, let parameters):
            guard !PostgresValue.holdsNUL(sql) else {
                fail(call, PostgresError(.invalidRequest, "the statement holds a NUL byte"))
                return true
            }
            guard Self.textIsNULFree(parameters) else {
                fail(call, PostgresError(.invalidRequest, "a text parameter holds a NUL byte"))
                return true
            }
            accepted = withParameterArrays(parameters) { count, types, values, lengths, formats in
                PQsendQueryParams(connection, sql, count, types, values, lengths, formats, 0)
            }
        case .prepare(let name, let sql, let types):
            guard !PostgresValue.holdsNUL(sql), !name.utf8.contains(0) else {
                fail(call, PostgresError(.invalidRequest, "the statement or its name holds a NUL byte"))
                return true
            }
            accepted = types.withUnsafeBufferPointer { types in
                PQsendPrepare(connection, name, sql, Int32(clamping: types.count), types.baseAddress)
            }
            if accepted != 0 { preparedInSession[name] = PreparedText(sql: sql, types: types) }
        case .executePrepared(let name, let parameters):
            guard !name.utf8.contains(0) else {
                fail(call, PostgresError(.invalidRequest, "the statement's name holds a NUL byte"))
                return true
            }
            guard Self.textIsNULFree(parameters) else {
                fail(call, PostgresError(.invalidRequest, "a text parameter holds a NUL byte"))
                return true
            }
            accepted = withParameterArrays(parameters) { count, _, values, lengths, formats in
                PQsendQueryPrepared(connection, name, count, values, lengths, formats, 0)
            }
        }
        guard accepted != 0 else {
            let message = Self.message(connection)
            if PQstatus(connection) == CONNECTION_BAD {
                fail(call, PostgresError(.connectionLost, message))
                lose(PostgresError(.connectionLost, message))
                return false
            }
            fail(call, PostgresError(.invalidRequest, message))
            return true
        }
        call.sentAt = .now()
        sent.append(.call(call))
        guard PQpipelineSync(connection) != 0 else {
            lose(PostgresError(.connectionLost, Self.message(connection)))
            return false
        }
        sent.append(.sync)
        _ = PQsetSingleRowMode(connection)
        stats.statementsSent += 1
        stats.mostInFlight = max(stats.mostInFlight, (sent.count - sentHead) / 2)
        return true
    }

    /// Sends the calls that waited for a transaction, in order: any while no transaction owns the connection, then
    /// only the statements of the one that does (a whole transaction may wait, `transaction(_:timeout:)`).
    private func sendWaiting() {
        while connected, let next = waiting.first {
            if let active = activeTransaction, next.role.transaction != active { return }
            waiting.removeFirst()
            send(next)
        }
    }

    // MARK: On the loop: reading

    private var currentItem: SentItem? { sentHead < sent.count ? sent[sentHead] : nil }

    private func popSent() {
        sentHead += 1
        if sentHead == sent.count {
            sent.removeAll(keepingCapacity: sent.count <= 1024)
            sentHead = 0
        } else if sentHead >= 512 {
            sent.removeFirst(sentHead)
            sentHead = 0
        }
        guard let connection = currentHandle else { return }
        _ = PQsetSingleRowMode(connection)
        if case .call(let call)? = currentItem, call.cancelWhenCurrent {
            call.cancelWhenCurrent = false
            requestCancel()
        }
    }

    private var currentHandle: OpaquePointer? {
        if case .connected(let connection) = state { return connection }
        return nil
    }

    private func socketReady(_ readiness: IOReadiness) {
        checkLoop()
        guard let connection = currentHandle else { return }
        if readiness.contains(.readable) || readiness.contains(.failed) {
            guard PQconsumeInput(connection) != 0 else {
                return lose(PostgresError(.connectionLost, Self.message(connection)))
            }
            drain()
        }
        guard connected else { return }
        if readiness.contains(.writable) || outputPending { flush() }
        if connected { drain() }
    }

    /// Writes what libpq holds; watches for writability while some is left.
    private func flush() {
        guard let connection = currentHandle else { return }
        switch PQflush(connection) {
        case 0: outputPending = false
        case 1: outputPending = true
        default: return lose(PostgresError(.connectionLost, Self.message(connection)))
        }
        watchSocket(of: connection, interest: outputPending ? [.readable, .writable] : .readable)
    }

    /// Takes every result libpq has parsed, in order, then the notifications.
    private func drain() {
        guard let connection = currentHandle else { return }
        // Not again from inside itself (completing a call may send another, which drains): the outer pass reads on.
        guard !draining else { return }
        draining = true
        defer { draining = false }
        reading: while PQisBusy(connection) == 0 {
            let result = PQgetResult(connection)
            guard let item = currentItem else {
                guard let result else { break reading }
                PQclear(result)
                continue
            }
            switch item {
            case .sync:
                guard let result else { break reading }
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { popSent() }
            case .call(let call):
                guard let result else {
                    // Popped first: what completing it sends (a ROLLBACK after a failed COMMIT) queues behind.
                    popSent()
                    complete(call)
                    guard connected else { return }
                    continue
                }
                absorb(result, into: call, connection: connection)
                PQclear(result)
                guard connected else { return }
            }
        }
        while let notification = PQnotifies(connection) {
            let channel = String(cString: notification.pointee.relname)
            let payload = notification.pointee.extra.map { String(cString: $0) } ?? ""
            let sender = notification.pointee.be_pid
            PQfreemem(notification)
            deliver(PostgresNotification(channel: channel, payload: payload, senderPID: sender))
        }
        if PQstatus(connection) == CONNECTION_BAD {
            lose(PostgresError(.connectionLost, Self.message(connection)))
        }
    }

    /// Folds one result of `call` into it.
    private func absorb(_ result: OpaquePointer, into call: PendingCall, connection: OpaquePointer) {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_SINGLE_TUPLE, PGRES_TUPLES_OK:
            guard !call.abandoned, call.failure == nil else { return }
            if !call.builder.append(result) {
                let limits = call.builder.limits
                abandon(
                    call,
                    PostgresError(
                        .resultTooLarge,
                        "the result passed its bounds (\(limits.maxRows) rows, \(limits.maxBytes) bytes)"))
                return
            }
            if status == PGRES_TUPLES_OK { call.builder.commandTag = Self.commandTag(result) }
        case PGRES_COMMAND_OK:
            call.builder.commandTag = Self.commandTag(result)
        case PGRES_EMPTY_QUERY:
            break
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR:
            if call.failure == nil { call.failure = Self.error(of: result, connection: connection) }
        case PGRES_PIPELINE_ABORTED:
            if call.failure == nil {
                call.failure = PostgresError(.server, "not run: an earlier statement of its pipeline failed")
            }
        case PGRES_COPY_IN:
            _ = PQputCopyEnd(connection, "COPY FROM STDIN is not supported by this client")
            if call.failure == nil { call.failure = PostgresError(.invalidRequest, "COPY is not supported") }
        default:
            // COPY TO STDOUT, replication: the connection cannot go on from here.
            fail(call, PostgresError(.invalidRequest, "COPY and replication are not supported"))
            lose(PostgresError(.connectionLost, "the server began a COPY or replication stream"))
        }
    }

    /// The end of `call`'s results: answers it (unless it was answered already).
    private func complete(_ call: PendingCall) {
        if let timer = call.timer { loop.cancelTimer(timer) }
        call.timer = nil
        if call.failure != nil {
            if case .prepare(let name, _, _) = call.statement { preparedInSession[name] = nil }
            // A COMMIT that failed must not leave the session in a transaction block the next caller would run in.
            if case .end = call.role { internalCall(.query("ROLLBACK", [])) }
        }
        // A prepared statement whose result no longer fits its plan (a column's type changed under it: a newer
        // replica's migration, an administrator): prepared again before its next use, and a call outside a
        // transaction is sent again once (in a transaction it cannot be: the transaction is aborted).
        if call.failure?.sqlState == "0A000", case .executePrepared(let name, _) = call.statement,
            preparedInSession[name] != nil
        {
            // Held by the session, but no longer what `prepared` names: DEALLOCATEd and prepared again.
            preparedInSession[name] = PreparedText(sql: "")
            if case .none = call.role, call.resends < Self.mostResends, let again = call.handOver() {
                return submit(again, timeout: configuration.queryTimeout, generation: nil)
            }
        }
        // A cancel request reaches the server's session asynchronously: when the statement it was meant for had
        // already finished, it cancels whatever the session runs next (SQLSTATE 57014 on a call nobody
        // abandoned). A statement outside a transaction that a cancel of ours, requested from shortly before it
        // was sent on, may have hit that way is sent again (a few times at most): a cancelled statement changed
        // nothing.
        if call.failure?.sqlState == "57014", !call.abandoned, case .none = call.role, call.resends < Self.mostResends,
            let cancelled = lastCancelAt, let sent = call.sentAt, sent < cancelled + .seconds(1),
            let again = call.handOver()
        {
            return submit(again, timeout: configuration.queryTimeout, generation: nil)
        }
        guard !call.isAnswered else {
            if call.failure == nil { call.onSuccess?() }
            return
        }
        if var failure = call.failure {
            if failure.sqlState == "26000", let cause = call.preparation?.failure { failure = cause }
            return fail(call, failure)
        }
        call.onSuccess?()
        call.answer(.success(call.builder.finish()))
    }

    // MARK: On the loop: connecting

    private func start(_ continuation: CheckedContinuation<Result<Void, PostgresError>, Never>) {
        checkLoop()
        starter = continuation
        loop.setLoopLocal(leaseKey, LoopLease(self))
        attempt()
    }

    /// Starts one connection attempt (resolving host names first, off the loop, when there are any).
    private func attempt() {
        checkLoop()
        retryTimer = nil
        guard case .idle = state else { return }
        if let (hosts, ports) = HostResolution.namesToResolve(configuration) {
            state = .resolving
            HostResolution.resolve(hosts, ports: ports) { [weak self] outcome in
                guard let self else { return }
                _ = self.loop.execute {
                    guard case .resolving = self.state else { return }
                    self.state = .idle
                    switch outcome {
                    case .success(let resolved): self.startConnecting(resolved: resolved)
                    case .failure(let error): self.attemptFailed(error)
                    }
                }
            }
            return
        }
        startConnecting(resolved: nil)
    }

    private func startConnecting(resolved: HostResolution.Resolved?) {
        let parameters = configuration.connectionParameters(resolved: resolved)
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let keywordList = keywords.map { UnsafePointer($0) } + [nil]
        let valueList = values.map { UnsafePointer($0) } + [nil]
        guard let connection = PQconnectStartParams(keywordList, valueList, 0) else {
            return attemptFailed(PostgresError(.refused, "libpq could not allocate a connection"))
        }
        guard PQstatus(connection) != CONNECTION_BAD else {
            let error = PostgresError(.refused, Self.message(connection))
            PQfinish(connection)
            return attemptFailed(error)
        }
        clibpq_silence_notices(connection)
        state = .connecting(connection)
        let timeout = configuration.connectTimeout
        connectTimer = loop.scheduleTimer(after: timeout) { [weak self] in
            guard let self else { return }
            self.connectTimer = nil
            guard case .connecting = self.state else { return }
            self.abortAttempt(PostgresError(.refused, "no connection within \(timeout)"))
        }
        // As libpq's documentation asks: behave as if PQconnectPoll had last answered "writing".
        pollConnect(PGRES_POLLING_WRITING)
    }

    private func pollConnect(_ polling: PostgresPollingStatusType) {
        guard case .connecting(let connection) = state else { return }
        switch polling {
        case PGRES_POLLING_READING, PGRES_POLLING_WRITING:
            let interest: IOInterest = polling == PGRES_POLLING_READING ? .readable : .writable
            // libpq may have opened a new socket (another host, or a retry without TLS).
            let socket = PQsocket(connection)
            if socket != watchedSocket { unwatchSocket() }
            guard socket >= 0, watch(socket, interest, again: true) else {
                return abortAttempt(PostgresError(.refused, "the event loop cannot watch the connection's socket"))
            }
        case PGRES_POLLING_OK:
            established(connection)
        default:
            abortAttempt(PostgresError(.refused, Self.message(connection)))
        }
    }

    private func connectReady() {
        checkLoop()
        guard case .connecting(let connection) = state else { return }
        pollConnect(PQconnectPoll(connection))
    }

    private func established(_ connection: OpaquePointer) {
        if let connectTimer { loop.cancelTimer(connectTimer) }
        connectTimer = nil
        guard PQsetnonblocking(connection, 1) == 0, PQenterPipelineMode(connection) != 0 else {
            return abortAttempt(PostgresError(.refused, "libpq refused pipeline mode: \(Self.message(connection))"))
        }
        state = .connected(connection)
        generation += 1
        failures = 0
        preparedInSession = [:]
        outputPending = false
        stats.connects += 1
        metrics?.connected()
        let reconnect = everConnected
        everConnected = true
        onEvent?(.connected(reconnect: reconnect))
        guard watch(PQsocket(connection), .readable) else {
            return lose(PostgresError(.connectionLost, "the event loop cannot watch the connection's socket"))
        }
        if let starter {
            self.starter = nil
            starter.resume(returning: .success(()))
        }
        if reconnect { resubscribe() }
    }

    /// Ends a connection attempt that failed.
    private func abortAttempt(_ error: PostgresError) {
        if let connectTimer { loop.cancelTimer(connectTimer) }
        connectTimer = nil
        unwatchSocket()
        if case .connecting(let connection) = state { PQfinish(connection) }
        state = .idle
        attemptFailed(error)
    }

    /// Counts a failed attempt; the first connection's caller gets the error, a reconnect tries again later.
    private func attemptFailed(_ error: PostgresError) {
        metrics?.attemptFailed()
        if let starter {
            self.starter = nil
            state = .closed
            loop.setLoopLocal(leaseKey, nil)
            starter.resume(returning: .failure(error))
            return
        }
        guard case .idle = state else { return }
        let delay = configuration.reconnect.delay(afterFailures: failures)
        failures += 1
        onEvent?(.attemptFailed(error, retryIn: delay))
        scheduleAttempt(after: delay)
    }

    private func scheduleAttempt(after delay: Duration) {
        retryTimer = loop.scheduleTimer(after: delay) { [weak self] in self?.attempt() }
    }

    /// The established connection broke: everything in flight fails, and a replacement is scheduled.
    private func lose(_ error: PostgresError) {
        guard case .connected(let connection) = state else { return }
        unwatchSocket()
        PQfinish(connection)
        state = .idle
        stats.losses += 1
        metrics?.lost()
        onEvent?(.lost(error))
        failEverything(with: error, waitingWith: PostgresError(.notConnected, "the connection was lost"))
        scheduleAttempt(after: configuration.reconnect.delay(afterFailures: 0))
    }

    private func failEverything(with error: PostgresError, waitingWith waitingError: PostgresError) {
        let inFlight = sent[sentHead...]
        sent = []
        sentHead = 0
        let held = waiting
        waiting = []
        activeTransaction = nil
        for case .call(let call) in inFlight { fail(call, error) }
        for call in held { fail(call, waitingError) }
    }

    /// Closes for good: what waits is answered `closed`.
    private func shutDown(_ closed: PostgresError = PostgresError(.closed, "the connection was closed")) {
        checkLoop()
        guard !isClosed else { return }
        if let retryTimer { loop.cancelTimer(retryTimer) }
        retryTimer = nil
        if let connectTimer { loop.cancelTimer(connectTimer) }
        connectTimer = nil
        unwatchSocket()
        switch state {
        case .connecting(let connection), .connected(let connection): PQfinish(connection)
        default: break
        }
        state = .closed
        failEverything(with: closed, waitingWith: closed)
        if let starter {
            self.starter = nil
            starter.resume(returning: .failure(closed))
        }
        let all = subscribers.values.flatMap(\.values)
        subscribers = [:]
        for continuation in all { continuation.finish() }
        loop.setLoopLocal(leaseKey, nil)
    }

    // MARK: On the loop: the socket

    /// Watches `socket` for `interest` (`again`: even when it is watched so already, since libpq may have closed
    /// it and opened another under the same number while connecting).
    private func watch(_ socket: Int32, _ interest: IOInterest, again: Bool = false) -> Bool {
        if !again && socket == watchedSocket && interest == watchedInterest { return true }
        let ok = loop.watch(fd: socket, interest: interest, owner: watchOwner) { [weak self] readiness in
            guard let self else { return }
            if case .connecting = self.state { return self.connectReady() }
            self.socketReady(readiness)
        }
        if ok {
            watchedSocket = socket
            watchedInterest = interest
        }
        return ok
    }

    private func watchSocket(of connection: OpaquePointer, interest: IOInterest) {
        guard watch(PQsocket(connection), interest) else {
            return lose(PostgresError(.connectionLost, "the event loop cannot watch the connection's socket"))
        }
    }

    private func unwatchSocket() {
        if watchedSocket >= 0 { loop.unwatch(fd: watchedSocket, owner: watchOwner) }
        watchedSocket = -1
        watchedInterest = []
    }

    // MARK: On the loop: cancel requests

    /// Asks the server to cancel the statement it runs now, from a thread of its own (`PQcancel` blocks while it
    /// connects); one at a time per connection, and again once it is done when another was asked for meanwhile.
    private func requestCancel() {
        guard let connection = currentHandle else { return }
        guard !cancelRunning else {
            cancelAgain = true
            return
        }
        guard let handle = PQgetCancel(connection) else { return }
        cancelRunning = true
        lastCancelAt = .now()
        stats.cancelRequests += 1
        let request = CancelRequest(handle)
        let loop = loop
        let weak = WeakConnection(self)
        CancelRequest.send(request) {
            _ = loop.execute { weak.connection?.cancelFinished() }
        }
    }

    private func cancelFinished() {
        cancelRunning = false
        guard cancelAgain else { return }
        cancelAgain = false
        if case .call(let call)? = currentItem, call.abandoned { requestCancel() }
    }

    // MARK: On the loop: notifications

    private func subscribe(_ channel: String, _ continuation: AsyncStream<PostgresListenEvent>.Continuation) -> Bool {
        guard !isClosed else { return false }
        lastSubscriber += 1
        let id = lastSubscriber
        subscribers[channel, default: [:]][id] = continuation
        let weak = WeakConnection(self)
        continuation.onTermination = { [loop] _ in
            _ = loop.execute { weak.connection?.unsubscribe(channel, id) }
        }
        return true
    }

    private var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    private func unsubscribe(_ channel: String, _ id: Int) {
        guard subscribers[channel]?.removeValue(forKey: id) != nil else { return }
        guard subscribers[channel]?.isEmpty == true else { return }
        subscribers[channel] = nil
        guard connected, let quoted = Self.quotedIdentifier(channel) else { return }
        internalCall(.query("UNLISTEN \(quoted)", []))
    }

    private func deliver(_ notification: PostgresNotification) {
        guard let listeners = subscribers[notification.channel] else { return }
        for continuation in listeners.values { continuation.yield(.notification(notification)) }
    }

    /// After a reconnect: LISTEN again on every channel, and tell its subscribers.
    private func resubscribe() {
        for channel in subscribers.keys {
            guard let quoted = Self.quotedIdentifier(channel) else { continue }
            let call = internalCall(.query("LISTEN \(quoted)", []))
            call?.onSuccess = { [weak self] in
                guard let listeners = self?.subscribers[channel] else { return }
                for continuation in listeners.values { continuation.yield(.resubscribed) }
            }
        }
    }

    /// Sends one of the connection's own statements (nobody waits for it).
    @discardableResult
    private func internalCall(_ statement: PostgresStatement) -> PendingCall? {
        let call = PendingCall(
            statement, role: .none, limits: configuration.limits, ticket: nil, continuation: nil)
        guard activeTransaction == nil, waiting.isEmpty else {
            waiting.append(call)
            return call
        }
        send(call)
        return call
    }

    // MARK: libpq's answers as values

    static func message(_ connection: OpaquePointer) -> String {
        guard let text = PQerrorMessage(connection) else { return "unknown libpq error" }
        let message = String(cString: text).trimmingTrailingNewlines
        return message.isEmpty ? "unknown libpq error" : message
    }

    static func commandTag(_ result: OpaquePointer) -> String {
        PQcmdStatus(result).map { String(cString: $0) } ?? ""
    }

    /// The typed error of an error result: a server error (with its SQLSTATE), or a lost connection when the
    /// server ended the session (severity FATAL or PANIC) or libpq reports one.
    static func error(of result: OpaquePointer, connection: OpaquePointer) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(Int32(CLIBPQ_DIAG_SQLSTATE))
        let message =
            field(Int32(CLIBPQ_DIAG_MESSAGE_PRIMARY))
            ?? PQresultErrorMessage(result).map { String(cString: $0).trimmingTrailingNewlines } ?? "unknown error"
        let severity = field(Int32(CLIBPQ_DIAG_SEVERITY))
        let sessionEnded = severity == "FATAL" || severity == "PANIC" || PQstatus(connection) == CONNECTION_BAD
        let kind: PostgresError.Kind = sessionEnded ? .connectionLost : (sqlState == nil ? .invalidRequest : .server)
        return PostgresError(
            kind, message, sqlState: sqlState, detail: field(Int32(CLIBPQ_DIAG_MESSAGE_DETAIL)),
            constraint: field(Int32(CLIBPQ_DIAG_CONSTRAINT_NAME)),
            sourceFunction: field(Int32(CLIBPQ_DIAG_SOURCE_FUNCTION)))
    }

    /// Whether no parameter sent as text holds a NUL (libpq would cut it there; PostgreSQL's text has none).
    static func textIsNULFree(_ parameters: [PostgresValue?]) -> Bool {
        parameters.allSatisfy { value in
            switch value {
            case .text(let text)?, .untyped(let text)?: !PostgresValue.holdsNUL(text)
            case .textArray(let elements)?: !elements.contains(where: PostgresValue.holdsNUL)
            default: true
            }
        }
    }

    /// `name` as a quoted SQL identifier; nil when it is empty, longer than PostgreSQL keeps, or holds NUL.
    static func quotedIdentifier(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 63, !name.utf8.contains(0) else { return nil }
        return "\"" + name.replacing("\"", with: "\"\"") + "\""
    }
}

/// A connection, weakly, for closures that cross threads (its state stays confined to its loop).
final class WeakConnection: Sendable {
    weak let connection: PostgresConnection?
    init(_ connection: PostgresConnection) { self.connection = connection }
}

/// A connection handed to the loop to be finished there (from `deinit`).
private final class FinishHandOver: @unchecked Sendable {
    private var handle: OpaquePointer?
    init(_ handle: OpaquePointer) { self.handle = handle }
    /// A hand-over the stopping loop let go without running it still finishes the connection.
    deinit { finish() }
    func finish() {
        guard let handle else { return }
        self.handle = nil
        PQfinish(handle)
    }
}
