import EventLoops
import GatewayFoundation
import Postgres
import Synchronization
import TestSupport
import Testing

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
    /// string, Unicode.
    static let awkwardKeys = [
        "plain", "a,b", "{brace}", "say \"hi\"", "back\\slash", " spaced ", "NULL", "null", "", "🐘 日本語", "\\\"",
    ]

    private func pool(size: Int = 2) async throws -> PostgresPool {
        try await PostgresPool.connect(try PostgresConfiguration(server.uri), on: loop.loop, size: size)
    }

    @Test func aTextArrayTravelsExactlyAsItsElements() async throws {
        defer { loop.stop() }
        let pool = try await pool(size: 1)
        let rows = try await pool.query(
            "SELECT element, ordinality FROM unnest($1::text[]) WITH ORDINALITY AS element ORDER BY ordinality",
            [.textArray(Self.awkwardKeys)])
        #expect(try rows.map { try $0[0].string() } == Self.awkwardKeys)
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
            let index = Self.awkwardKeys.firstIndex(of: key)
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

    private func statementsSent(_ pool: PostgresPool) async throws -> Int {
        var total = 0
        for connection in pool.connections { total += await connection.statistics().statementsSent }
        return total
    }
}
