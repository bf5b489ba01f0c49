import EventLoops
import GatewayFoundation
import Metrics
import Postgres
import Synchronization
import TestSupport
import Testing

/// The connection against a real PostgreSQL (one throw-away server for these tests, on a loopback port): queries
/// and their parameters, prepared statements, pipelining, a loop that never blocks, deadlines, bounds,
/// transactions and LISTEN/NOTIFY.
@Suite(.serialized, .enabled(if: PostgresProcess.available, "PostgreSQL's server programs are not installed"))
struct PostgresConnectionTests {
    let server: PostgresProcess
    let loop: TestLoop

    init() async throws {
        server = try await PostgresProcess.shared()
        loop = try TestLoop()
    }

    private func connect(
        _ change: (inout PostgresConfiguration) -> Void = { _ in }, metrics: PostgresMetrics? = nil
    ) async throws -> PostgresConnection {
        var configuration = try PostgresConfiguration(server.uri)
        change(&configuration)
        return try await PostgresConnection.connect(configuration, on: loop.loop, metrics: metrics)
    }

    @Test func aSimpleQueryRoundTrips() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        let rows = try await connection.query("SELECT 1 AS one, 'x'::text AS letter, NULL::int4 AS nothing")
        #expect(rows.count == 1)
        #expect(rows.columns.map(\.name) == ["one", "letter", "nothing"])
        #expect(rows.columns.map(\.typeOID) == [PostgresType.int4, PostgresType.text, PostgresType.int4])
        #expect(try rows[0][0].int() == 1)
        #expect(try rows[0]["letter"].string() == "x")
        #expect(rows[0]["nothing"].isNull)
        #expect(try rows[0]["nothing"].int() == nil)
        #expect(rows.commandTag == "SELECT 1")
        #expect(rows.affectedRows == 1)
        #expect(await failureKind { try rows[0]["missing"].string() } == .decoding)
        #expect(await failureKind { try rows[0]["letter"].int() } == .decoding)
        // A server error is typed, with its SQLSTATE, and the connection goes on.
        let error = await failure { try await connection.query("SELECT * FROM no_such_table") }
        #expect(error?.kind == .server)
        #expect(error?.sqlState == "42P01")
        #expect(try await connection.query("SELECT 2")[0][0].int() == 2)
        await connection.close()
        #expect(await failureKind { try await connection.query("SELECT 1") } == .closed)
    }

    @Test func parametersTravelApartFromTheStatement() async throws {
        defer { loop.stop() }
        let connection = try await connect { $0.limits = PostgresResultLimits(maxRows: 100, maxBytes: 1 << 20) }
        let text = "it's \"quoted\" \\ back'slash; DROP TABLE x; -- 🐘 Ελληνικά 日本語"
        let bytes: [UInt8] = [0, 1, 2, 0xFF, 0x5C, 0x27, 0]
        let rows = try await connection.query(
            "SELECT $1::text, $2::int8, $3::float8, $4::bool, $5::bytea, $6::text IS NULL, $7::float8, length($1)",
            [.text(text), .integer(-42), .double(0.1), .boolean(true), .bytes(bytes), nil, .double(-.infinity)])
        let row = rows[0]
        #expect(try row[0].string() == text)
        #expect(try row[1].int() == -42)
        #expect(try row[2].double() == 0.1)
        #expect(try row[3].bool() == true)
        #expect(try row[4].data() == bytes)
        #expect(try row[5].bool() == true)
        #expect(try row[6].double() == -.infinity)
        #expect(try row[7].int() == Int64(text.count))
        // Literals, and a value the server types from its use.
        let typed = try await connection.query(
            "SELECT $1::int4 + 1, $2 = timestamptz '2026-01-01T00:00:00Z'", [7, .untyped("2026-01-01 00:00:00+00")])
        #expect(try typed[0][0].int() == 8)
        #expect(try typed[0][1].bool() == true)
        // PostgreSQL's text holds no NUL: refused before anything is sent, typed.
        let nul = await failure { try await connection.query("SELECT $1::text", [.text("a\u{0}b")]) }
        #expect(nul?.kind == .invalidRequest)
        // A value near the bound passes; one past it fails the call, and the connection goes on.
        let near = try await connection.query("SELECT repeat('x', $1::int4)", [.integer(1_000_000)])
        #expect(try near[0][0].string()?.utf8.count == 1_000_000)
        let past = await failure { try await connection.query("SELECT repeat('x', 1100000)") }
        #expect(past?.kind == .resultTooLarge)
        #expect(try await connection.query("SELECT 3")[0][0].int() == 3)
        await connection.close()
    }

    @Test func preparedStatementsArePreparedOnceAndReused() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        try await connection.prepare("double_it", "SELECT $1::int8 * 2 AS doubled")
        for value in 1...5 {
            let rows = try await connection.execute(prepared: "double_it", [.integer(Int64(value))])
            #expect(try rows[0]["doubled"].int() == Int64(value * 2))
        }
        // Preparing the same statement again costs nothing; the server holds it once.
        try await connection.prepare("double_it", "SELECT $1::int8 * 2 AS doubled")
        let count = try await connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE name = 'double_it'")
        #expect(try count[0][0].int() == 1)
        // Another statement under the name replaces it.
        try await connection.prepare("double_it", "SELECT $1::int8 * 3 AS tripled")
        #expect(try await connection.execute(prepared: "double_it", [5])[0][0].int() == 15)
        #expect(await failureKind { try await connection.execute(prepared: "never_prepared") } == .invalidRequest)
        let syntax = await failure { try await connection.prepare("broken", "SELEC 1") }
        #expect(syntax?.sqlState == "42601")
        await connection.close()
    }

    @Test func queriesWithParametersArePreparedOnceByTheConnection() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        let sql = "SELECT $1::int8 + 1 AS next"
        for value in Int64(1)...5 {
            #expect(try await connection.query(sql, [.integer(value)])[0][0].int() == value + 1)
        }
        // Parsed and planned once: the server holds the statement once, under the connection's own name.
        let held = try await connection.query(
            "SELECT name, parameter_types::text FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
        #expect(held.count == 1)
        #expect(try held[0][0].string()?.hasPrefix("appstore_gateway_") == true)
        #expect(try held[0][1].string() == "{bigint}")
        // The same text with other parameter types is another statement, typed as the call declares them.
        #expect(try await connection.query("SELECT $1 AS echoed", [.text("x")])[0][0].string() == "x")
        #expect(try await connection.query("SELECT $1 AS echoed", [.integer(7)])[0][0].int() == 7)
        #expect(try await connection.query("SELECT $1 AS echoed", [nil])[0][0].isNull)
        // A statement that does not parse fails with the server's own error, every time, and nothing else does.
        for _ in 0..<2 {
            let syntax = await failure { try await connection.query("SELEC $1::int8", [1]) }
            #expect(syntax?.sqlState == "42601")
        }
        #expect(try await connection.query(sql, [41])[0][0].int() == 42)
        // Many parameters (a multi-row insert, one shape per row count): run as it is.
        let wide = "SELECT " + (1...40).map { "$\($0)::int8" }.joined(separator: " + ")
        #expect(try await connection.query(wide, (1...40).map { .integer(Int64($0)) })[0][0].int() == 820)
        let widePrepared = try await connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", [.text(wide)])
        #expect(try widePrepared[0][0].int() == 0)
        // Without parameters a statement runs as it is (nothing is prepared for it).
        _ = try await connection.query("SELECT 1")
        let unnamed = try await connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT 1'", [])
        #expect(try unnamed[0][0].int() == 0)
        await connection.close()
    }

    @Test func aPreparedPlanThatWentStaleIsPreparedAgain() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        _ = try await connection.query("CREATE TEMPORARY TABLE drifting (id int8 PRIMARY KEY, amount int8)")
        _ = try await connection.query("INSERT INTO drifting VALUES ($1, $2)", [1, 10])
        let select = "SELECT amount FROM drifting WHERE id = $1"
        #expect(try await connection.query(select, [1])[0][0].int() == 10)
        // A migration changes the column's type under the prepared statement: the call still answers.
        _ = try await connection.query("ALTER TABLE drifting ALTER COLUMN amount TYPE text USING amount::text")
        #expect(try await connection.query(select, [1])[0][0].string() == "10")
        _ = try await connection.query("ALTER TABLE drifting ALTER COLUMN amount TYPE int4 USING amount::int4")
        // In a transaction the whole transaction runs again.
        let runs = Lock(0)
        let amount = try await connection.transaction { transaction in
            runs.withLock { $0 += 1 }
            return try await transaction.query(select, [1])[0][0].int()
        }
        #expect(amount == 10)
        #expect(runs.withLock { $0 } == 2)
        await connection.close()
    }

    @Test func anotherUnsupportedFeatureFailsOnceAndNamesItsRoutine() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        _ = try await connection.query("CREATE TEMPORARY TABLE locked (id int8 PRIMARY KEY)")
        // SQLSTATE 0A000 like a stale plan, from the parser: preparing again cannot mend it, so it is not retried.
        let error = await #expect(throws: PostgresError.self) {
            try await connection.query("SELECT count(*) FROM locked WHERE id > $1 FOR UPDATE", [0])
        }
        #expect(error?.sqlState == "0A000")
        #expect(error?.sourceFunction?.isEmpty == false)
        #expect(error?.isStalePlan == false)
        #expect(try await connection.query("SELECT 1")[0][0].int() == 1)
        await connection.close()
    }

    @Test func aTransactionSendsABatchOfStatementsTogether() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        _ = try await connection.query("CREATE TEMPORARY TABLE batch_items (id int8 PRIMARY KEY, name text)")
        let sentBefore = await connection.statistics().statementsSent
        let counts = try await connection.transaction { transaction in
            let rows = try await transaction.queries(
                (1...20).map { PostgresQuery("INSERT INTO batch_items VALUES ($1, $2)", [.integer(Int64($0)), "n"]) }
                    + [PostgresQuery("SELECT count(*) FROM batch_items WHERE id <= $1", [10])])
            return rows.map { $0.affectedRows }
        }
        #expect(counts == Array(repeating: 1, count: 20) + [1])
        let statistics = await connection.statistics()
        // BEGIN, two prepares (the INSERT's and the SELECT's), 21 statements, COMMIT; all 21 in flight at once.
        #expect(statistics.statementsSent - sentBefore == 25)
        #expect(statistics.mostInFlight >= 21)
        #expect(try await connection.query("SELECT count(*) FROM batch_items")[0][0].int() == 20)
        // A failing statement fails the batch with its own error (those after it are not run) and rolls back.
        do {
            try await connection.transaction { transaction in
                _ = try await transaction.queries([
                    PostgresQuery("INSERT INTO batch_items VALUES ($1, $2)", [100, "new"]),
                    PostgresQuery("INSERT INTO batch_items VALUES ($1, $2)", [1, "again"]),
                    PostgresQuery("INSERT INTO batch_items VALUES ($1, $2)", [101, "after"]),
                ])
            }
            Issue.record("the duplicate key was accepted")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation)
        }
        #expect(try await connection.query("SELECT count(*) FROM batch_items")[0][0].int() == 20)
        #expect(try await connection.transaction { try await $0.queries([]) }.isEmpty)
        await connection.close()
    }

    @Test func aTransactionSentWholeCommitsInOneRoundTripOrNotAtAll() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        _ = try await connection.query("CREATE TEMPORARY TABLE whole (id int8 PRIMARY KEY)")
        let rows = try await connection.transaction([
            PostgresQuery("INSERT INTO whole VALUES ($1)", [1]),
            PostgresQuery("INSERT INTO whole VALUES ($1) RETURNING id * 10", [2]),
        ])
        #expect(rows.count == 2)
        #expect(try rows[1][0][0].int() == 20)
        #expect(await connection.statistics().mostInFlight >= 4)
        // A failure anywhere: its own error, nothing of the transaction kept, the connection out of it.
        let duplicate = await failure {
            try await connection.transaction([
                PostgresQuery("INSERT INTO whole VALUES ($1)", [3]),
                PostgresQuery("INSERT INTO whole VALUES ($1)", [1]),
                PostgresQuery("INSERT INTO whole VALUES ($1)", [4]),
            ])
        }
        #expect(duplicate?.isUniqueViolation == true)
        #expect(
            try await connection.query("SELECT array_agg(id ORDER BY id)::text FROM whole")[0][0].string() == "{1,2}")
        // Behind another caller's transaction it waits whole, then runs after it; given up whole past its deadline.
        let late = try await connection.transaction { transaction in
            _ = try await transaction.query("INSERT INTO whole VALUES ($1)", [5])
            let behind = Task {
                try await connection.transaction([PostgresQuery("INSERT INTO whole VALUES ($1)", [6])])
            }
            let expired = Task {
                await failureKind {
                    try await connection.transaction(
                        [PostgresQuery("INSERT INTO whole VALUES ($1)", [7])], timeout: .milliseconds(50))
                }
            }
            let kind = await expired.value
            try await Task.sleep(for: .milliseconds(20))
            _ = try await transaction.query("INSERT INTO whole VALUES ($1)", [8])
            return (behind, kind)
        }
        #expect(late.1 == .timeout)
        _ = try await late.0.value
        #expect(
            try await connection.query("SELECT array_agg(id ORDER BY id)::text FROM whole")[0][0].string()
                == "{1,2,5,6,8}")
        #expect(try await connection.query("SELECT $1::int8", [9])[0][0].int() == 9)
        await connection.close()
    }

    @Test func aHundredPipelinedQueriesCompleteInOrder() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        let order = Shared<[Int]>([])
        try await loop.run {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        let rows = try? await connection.query("SELECT $1::int8", [.integer(Int64(index))])
                        let value = (try? rows?[0][0].int()).flatMap { $0 }
                        order.withLock { $0.append(value.map(Int.init) ?? -1) }
                    }
                }
            }
        }
        #expect(order.withLock { $0 } == Array(0..<100))
        let statistics = await connection.statistics()
        #expect(statistics.mostInFlight >= 50, "\(statistics)")
        await connection.close()
    }

    @Test func theLoopKeepsRunningWhileTheServerWorks() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        let ticks = Atomic<Int>(0)
        let running = Atomic<Bool>(true)
        let eventLoop = loop.loop
        @Sendable func tick() {
            guard running.load(ordering: .relaxed) else { return }
            ticks.add(1, ordering: .relaxed)
            eventLoop.scheduleTimer(after: .milliseconds(10)) { tick() }
        }
        eventLoop.execute { tick() }
        let start = MonotonicInstant.now()
        let value = try await loop.run { try await connection.query("SELECT pg_sleep(1), 7")[0][1].int() }
        running.store(false, ordering: .relaxed)
        #expect(value == 7)
        #expect(seconds(since: start) >= 1)
        #expect(
            ticks.load(ordering: .relaxed) >= 50, "the loop's 10 ms timer fired \(ticks.load(ordering: .relaxed)) times"
        )
        await connection.close()
    }

    @Test func aDeadlineCancelsTheStatementOnTheServer() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        let start = MonotonicInstant.now()
        let error = await failure { try await connection.query("SELECT pg_sleep(10)", timeout: .milliseconds(200)) }
        #expect(error?.kind == .timeout)
        #expect(seconds(since: start) < 2)
        // The sleep was cancelled: the next statement is answered at once, not after ten seconds.
        let next = MonotonicInstant.now()
        #expect(try await connection.query("SELECT 5", timeout: .seconds(3))[0][0].int() == 5)
        #expect(seconds(since: next) < 2)
        #expect(await connection.statistics().cancelRequests >= 1)
        // A caller's cancelled task cancels its statement the same way.
        let task = Task { try await connection.query("SELECT pg_sleep(10)") }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let cancelled = await failure { try await task.value }
        #expect(cancelled?.kind == .cancelled, "\(String(describing: cancelled))")
        #expect(try await connection.query("SELECT 6", timeout: .seconds(3))[0][0].int() == 6)
        await connection.close()
    }

    @Test func aCancelMeantForAFinishedStatementDoesNotFailTheNextOne() async throws {
        defer { loop.stop() }
        let connection = try await connect { $0.limits = PostgresResultLimits(maxRows: 10, maxBytes: 1 << 20) }
        // Each oversized result is abandoned and cancelled on the server, where it has usually finished already:
        // the cancel then lands on whatever the session runs next, the statement issued right behind it (which
        // takes a moment, so that it is running when the cancel arrives).
        for round in Int64(0)..<30 {
            async let oversized = failureKind { try await connection.query("SELECT generate_series(1, 50)") }
            async let next = connection.query("SELECT $1::int8 AS n FROM pg_sleep(0.02)", [.integer(round)])
            #expect(await oversized == .resultTooLarge)
            #expect(try await next[0][0].int() == round)
        }
        #expect(await connection.statistics().cancelRequests >= 1)
        await connection.close()
    }

    @Test func aResultPastItsBoundsFailsWithoutHoldingIt() async throws {
        defer { loop.stop() }
        let connection = try await connect { $0.limits = PostgresResultLimits(maxRows: 1000, maxBytes: 64 << 10) }
        #expect(try await connection.query("SELECT generate_series(1, 1000)").count == 1000)
        let start = MonotonicInstant.now()
        let rows = await failure { try await connection.query("SELECT generate_series(1, 100000000)") }
        #expect(rows?.kind == .resultTooLarge)
        #expect(seconds(since: start) < 5)
        let bytes = await failure {
            try await connection.query("SELECT repeat('y', 1000) FROM generate_series(1, 100)")
        }
        #expect(bytes?.kind == .resultTooLarge)
        #expect(try await connection.query("SELECT 4", timeout: .seconds(5))[0][0].int() == 4)
        await connection.close()
    }

    @Test func aTransactionCommitsOrRollsBackAsAWhole() async throws {
        defer { loop.stop() }
        let connection = try await connect()
        _ = try await connection.query("CREATE TEMPORARY TABLE items (id int8 PRIMARY KEY, name text)")
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await connection.transaction { transaction in
                _ = try await transaction.query("INSERT INTO items VALUES ($1, $2)", [1, "one"])
                throw Refused()
            }
        }
        #expect(try await connection.query("SELECT count(*) FROM items")[0][0].int() == 0)
        let inserted = try await connection.transaction { transaction in
            _ = try await transaction.query("INSERT INTO items VALUES ($1, $2)", [1, "one"])
            return try await transaction.query("INSERT INTO items VALUES ($1, $2)", [2, "two"]).affectedRows
        }
        #expect(inserted == 1)
        #expect(try await connection.query("SELECT count(*) FROM items")[0][0].int() == 2)
        // A failing statement rolls the whole transaction back.
        do {
            try await connection.transaction { transaction in
                _ = try await transaction.query("INSERT INTO items VALUES (3, 'three')")
                _ = try await transaction.query("INSERT INTO items VALUES (1, 'again')")
            }
            Issue.record("the duplicate key was accepted")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation)
        }
        #expect(try await connection.query("SELECT count(*) FROM items")[0][0].int() == 2)
        // A COMMIT that fails (a deferred constraint) leaves no transaction open behind it.
        _ = try await connection.query("CREATE TEMPORARY TABLE deferred (id int8 UNIQUE DEFERRABLE INITIALLY DEFERRED)")
        do {
            try await connection.transaction { transaction in
                _ = try await transaction.query("INSERT INTO deferred VALUES (1), (1)")
            }
            Issue.record("the deferred duplicate was committed")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation)
        }
        _ = try await connection.query("INSERT INTO deferred VALUES (2)")
        #expect(try await connection.query("SELECT count(*) FROM deferred")[0][0].int() == 1)
        // Another caller's statement issued meanwhile waits for the transaction's end, outside it.
        let seen = try await connection.transaction { transaction in
            _ = try await transaction.query("INSERT INTO items VALUES (4, 'four')")
            let outside = Task { try await connection.query("SELECT count(*) FROM items")[0][0].int() }
            try await Task.sleep(for: .milliseconds(50))
            _ = try await transaction.query("DELETE FROM items WHERE id = 4")
            return outside
        }
        #expect(try await seen.value == 2)
        await connection.close()
    }

    @Test func aNotificationFromAnotherSessionArrives() async throws {
        defer { loop.stop() }
        let listener = try await connect()
        let sender = try await connect()
        let events = try await listener.listen("gateway wake")
        let pid = try await sender.query("SELECT pg_backend_pid()")[0][0].int()
        _ = try await sender.query("SELECT pg_notify($1, $2)", ["gateway wake", "app-1"])
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(
            event
                == .notification(
                    PostgresNotification(channel: "gateway wake", payload: "app-1", senderPID: Int32(pid ?? 0))))
        await listener.close()
        await sender.close()
    }

    @Test func aConnectionLetGoWithoutClosingEndsItsSubscriptionsAndSession() async throws {
        defer { loop.stop() }
        let observer = try await connect()
        var connection: PostgresConnection? = try await connect { configuration in
            configuration = (try? PostgresConfiguration(server.uri + "?application_name=let_go")) ?? configuration
        }
        let events = try await connection?.listen("let_go")
        let sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'let_go'"
        #expect(try await observer.query(sessions)[0][0].int() == 1)
        connection = nil
        var iterator = events?.makeAsyncIterator()
        #expect(await iterator?.next() == nil)
        var left: Int64? = 1
        for _ in 0..<100 where left != 0 {
            try await Task.sleep(for: .milliseconds(20))
            left = try await observer.query(sessions)[0][0].int()
        }
        #expect(left == 0)
        await observer.close()
    }

    @Test func aPoolSpreadsItsCallersOverItsConnections() async throws {
        defer { loop.stop() }
        let registry = MetricsRegistry()
        let pool = try await PostgresPool.connect(
            try PostgresConfiguration(server.uri), on: loop.loop, size: 3, metrics: PostgresMetrics(registry: registry))
        #expect(pool.connections.count == 3)
        let pids = try await loop.run {
            try await withThrowingTaskGroup(of: Int64?.self) { group in
                for _ in 0..<30 {
                    group.addTask { try await pool.query("SELECT pg_backend_pid(), pg_sleep(0.01)")[0][0].int() }
                }
                var pids: Set<Int64> = []
                for try await pid in group { if let pid { pids.insert(pid) } }
                return pids
            }
        }
        #expect(pids.count == 3)
        try await pool.prepare("pool_add", "SELECT $1::int8 + $2::int8")
        for _ in 0..<6 { #expect(try await pool.execute(prepared: "pool_add", [2, 3])[0][0].int() == 5) }
        let committed = try await pool.transaction { try await $0.query("SELECT 9")[0][0].int() }
        #expect(committed == 9)
        let connects = registry.counter("appstore_gateway_postgres_connects_total", help: "", labelNames: ["outcome"])
        #expect(connects.labels("connected").current == 3)
        await pool.close()
    }
}
