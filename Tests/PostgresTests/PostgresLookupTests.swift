import EventLoops
import GatewayFoundation
import Synchronization
import TestSupport
import Testing

@testable import Postgres

/// `PostgresPool.lookup`: point lookups issued in one pass of a loop share one statement, and each caller gets
/// the rows of its own key, whatever the key holds.
@Suite(.serialized, .enabled(if: PostgresProcess.available, "PostgreSQL's server programs are not installed"))
struct PostgresLookupTests {
    let server: PostgresProcess
    let loop: TestLoop

    init() async throws {
        server = try await PostgresProcess.shared()
        loop = try TestLoop()
    }

    /// Keys a text array literal must quote: commas, braces, quotes, backslashes, spaces, `NULL`, the empty
    /// string, Unicode; and two spellings of `é` (composed, and `e` with a combining accent), which Swift calls
    /// equal and PostgreSQL does not.
    static let awkwardKeys = [
        "plain", "a,b", "{brace}", "say \"hi\"", "back\\slash", " spaced ", "NULL", "null", "", "🐘 日本語",
        "\\\"", "\u{E9}", "e\u{301}",
    ]

    /// The index of `key` in `awkwardKeys`, comparing bytes.
    static func index(of key: String) -> Int? {
        awkwardKeys.firstIndex { Array($0.utf8) == Array(key.utf8) }
    }

    private func pool(size: Int = 2) async throws -> PostgresPool {
        try await PostgresPool.connect(try PostgresConfiguration(server.uri), on: loop.loop, size: size)
    }

    @Test func aTextArrayTravelsExactlyAsItsElements() async throws {
        defer { loop.stop() }
        let pool = try await pool(size: 1)
        let rows = try await pool.query(
            "SELECT element, ordinality FROM unnest($1::text[]) WITH ORDINALITY AS element ORDER BY ordinality",
            [.textArray(Self.awkwardKeys)])
        #expect(try rows.map { Array(try $0[0].string()?.utf8 ?? "".utf8) } == Self.awkwardKeys.map { Array($0.utf8) })
        let empty = try await pool.query("SELECT cardinality($1::text[])", [.textArray([])])
        #expect(try empty[0][0].int() == 0)
        // PostgreSQL's text holds no NUL: refused before anything is sent.
        #expect(
            await failureKind { try await pool.query("SELECT $1::text[]", [.textArray(["a", "b\0c"])]) }
                == .invalidRequest)
        await pool.close()
    }

    @Test func lookupsOfOnePassShareOneStatementAndEachGetsItsOwnRows() async throws {
        defer { loop.stop() }
        let pool = try await pool()
        let table = "lookup_\(UInt32.random(in: 0...UInt32.max))"
        _ = try await pool.query("CREATE TABLE \(table) (owner text, id text, n int8)")
        // Two owners (the shared parameter), each key with 0, 1 or 2 rows.
        for (index, key) in Self.awkwardKeys.enumerated() {
            for copy in 0..<(index % 3) {
                _ = try await pool.query(
                    "INSERT INTO \(table) VALUES ($1, $2, $3)", [.text("one"), .text(key), .integer(Int64(copy))])
            }
            _ = try await pool.query("INSERT INTO \(table) VALUES ('two', $1, 99)", [.text(key)])
        }
        let sql = "SELECT id, n FROM \(table) WHERE owner = $1 AND id = ANY($2) ORDER BY n"
        let before = try await statementsSent(pool)
        // Every key asked twice (a key asked twice is sent once), plus keys nobody stored, from tasks on the loop.
        let asked = Self.awkwardKeys + Self.awkwardKeys + ["absent", "other"]
        let answers = try await loop.run {
            try await withThrowingTaskGroup(of: (String, [Int64]).self) { group in
                for key in asked {
                    group.addTask {
                        let rows = try await pool.lookup(sql, shared: [.text("one")], key: key)
                        return (key, try rows.map { try $0[1].int() ?? -1 })
                    }
                }
                var answers: [(String, [Int64])] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
        }
        #expect(answers.count == asked.count)
        for (key, numbers) in answers {
            let index = Self.index(of: key)
            #expect(numbers == (0..<Int64(index.map { $0 % 3 } ?? 0)).map { $0 }, "\(key)")
        }
        let sent = try await statementsSent(pool) - before
        // One statement, or a few when the tasks reached the loop in more than one pass; never one per caller.
        #expect(sent >= 1 && sent <= 4, "\(sent) statements for \(asked.count) lookups")
        // Another owner is another shape: its own statement, its own rows.
        let two = try await pool.lookup(sql, shared: [.text("two")], key: "a,b")
        #expect(try two.map { try $0[1].int() } == [99])
        _ = try await pool.query("DROP TABLE \(table)")
        await pool.close()
    }

    @Test func moreKeysThanOneStatementCarriesMakeMoreStatements() async throws {
        defer { loop.stop() }
        let pool = try await pool()
        let count = 300
        let before = try await statementsSent(pool)
        let found = try await loop.run {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let rows = try await pool.lookup(
                            "SELECT k FROM unnest($2::text[]) AS k WHERE k <> $1", shared: [.text("none")],
                            key: "key-\(index)")
                        return try rows.count == 1 && rows[0][0].string() == "key-\(index)"
                    }
                }
                var found = 0
                for try await ok in group where ok { found += 1 }
                return found
            }
        }
        #expect(found == count)
        let sent = try await statementsSent(pool) - before
        #expect(sent >= 3 && sent < count / 4, "\(sent) statements for \(count) lookups")
        await pool.close()
    }

    @Test func aFailingStatementFailsEveryCallerOfItsBatchAndNoOther() async throws {
        defer { loop.stop() }
        let pool = try await pool()
        let results = try await loop.run {
            await withTaskGroup(of: (Bool, PostgresError.Kind?).self) { group in
                for index in 0..<10 {
                    let broken = index.isMultiple(of: 2)
                    group.addTask {
                        let sql =
                            broken
                            ? "SELECT k, 1 / (length(k) - length(k)) FROM unnest($1::text[]) AS k"
                            : "SELECT k FROM unnest($1::text[]) AS k"
                        let kind = await failureKind { try await pool.lookup(sql, key: "k\(index)") }
                        return (broken, kind)
                    }
                }
                var results: [(Bool, PostgresError.Kind?)] = []
                for await result in group { results.append(result) }
                return results
            }
        }
        #expect(results.count == 10)
        for (broken, kind) in results { #expect(kind == (broken ? .server : nil)) }
        await pool.close()
    }

    @Test func aLookupFromOffTheLoopIsHandedToIt() async throws {
        defer { loop.stop() }
        let pool = try await pool(size: 1)
        let rows = try await pool.lookup("SELECT k, upper(k) FROM unnest($1::text[]) AS k", key: "abc")
        #expect(try rows.map { try $0[1].string() } == ["ABC"])
        await pool.close()
    }

    @Test func aCancelledLookupIsAnsweredAtOnceAndTheOthersGetTheirRows() async throws {
        defer { loop.stop() }
        let pool = try await pool(size: 1)
        // The batch's statement sleeps: the cancellation comes while it runs (or, on a slow machine, before it
        // is sent); either way the cancelled caller is answered `.cancelled`, and only it.
        let sql = "SELECT k FROM unnest($1::text[]) AS k, pg_sleep(0.3)"
        let tasks = (0..<3).map { index in
            Task(executorPreference: loop.loop) { try await pool.lookup(sql, key: "k\(index)").count }
        }
        try await Task.sleep(for: .milliseconds(100))
        tasks[1].cancel()
        #expect(await failureKind { try await tasks[1].value } == .cancelled)
        #expect(try await tasks[0].value == 1)
        #expect(try await tasks[2].value == 1)
        // A key PostgreSQL's text cannot hold is refused alone; the lookups beside it are answered.
        let mixed = try await loop.run {
            await withTaskGroup(of: PostgresError.Kind?.self) { group in
                for key in ["fine", "bad\0key", "also fine"] {
                    group.addTask {
                        await failureKind { try await pool.lookup("SELECT k FROM unnest($1::text[]) AS k", key: key) }
                    }
                }
                var kinds: [PostgresError.Kind?] = []
                for await kind in group { kinds.append(kind) }
                return kinds
            }
        }
        #expect(mixed.filter { $0 == nil }.count == 2)
        #expect(mixed.filter { $0 == .invalidRequest }.count == 1)
        await pool.close()
    }

    /// Lookups added in the pass in which the loop stops are never sent: they are answered `.closed`, not left
    /// waiting on a loop nobody runs.
    @Test func lookupsWaitingWhenTheLoopStopsAreAnsweredClosed() async throws {
        defer { loop.stop() }
        let stopping = try TestLoop()
        defer { stopping.stop() }
        let sent = Shared(0)
        let lookups = PostgresLookups(loop: stopping.loop) { _, respond in
            sent.withLock { $0 += 1 }
            respond(.failure(PostgresError(.server, "sent")))
        }
        let parked = Shared<[CheckedContinuation<PostgresLookups.Answer, Never>]>([])
        async let answers = withTaskGroup(of: PostgresLookups.Answer.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    await withCheckedContinuation { continuation in parked.withLock { $0.append(continuation) } }
                }
            }
            var answers: [PostgresLookups.Answer] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        while parked.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(1)) }
        let continuations = parked.withLock { $0 }
        let loop = stopping.loop
        // The loop reads a stop request at the start of a pass: the adds run in the pass that stops, and the batch
        // they schedule for the next pass is never run.
        loop.execute {
            loop.stop()
            loop.execute {
                for (index, continuation) in continuations.enumerated() {
                    lookups.add(
                        sql: "SELECT k FROM unnest($1::text[]) AS k", shared: [], keyColumn: 0, key: "k\(index)",
                        waiter: PostgresLookups.Waiter(key: "k\(index)"), continuation: continuation)
                }
            }
        }
        let results = await answers
        #expect(results.count == 3)
        for result in results {
            guard case .failure(let error) = result else {
                Issue.record("a lookup of a stopped loop must fail")
                continue
            }
            #expect(error.kind == .closed)
        }
        #expect(sent.withLock { $0 } == 0)
    }

    private func statementsSent(_ pool: PostgresPool) async throws -> Int {
        var total = 0
        for connection in pool.connections { total += await connection.statistics().statementsSent }
        return total
    }
}
