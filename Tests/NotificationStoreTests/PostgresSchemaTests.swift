import EventLoops
import GatewayFoundation
import NotificationStore
import Postgres
import TestSupport
import Testing

/// The fleet database's schema: migrated once under the advisory lock by replicas starting together, and refused
/// when a newer release migrated it.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresSchemaTests {
    @Test func replicasStartingTogetherMigrateOnce() async throws {
        let server = try await PostgresProcess.shared()
        let uri = try await server.makeDatabase()
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        // Five openings at once: each takes the lock in turn; the first migrates, the others find it done.
        let databases = try await withThrowingTaskGroup(of: PostgresDatabase.self) { group in
            for _ in 0..<5 {
                group.addTask { try await PostgresDatabase.open(.init(uri: uri), on: loop.loop) }
            }
            var opened: [PostgresDatabase] = []
            for try await database in group { opened.append(database) }
            return opened
        }
        let rows = try await databases[0].pool.query("SELECT version FROM gateway_schema ORDER BY version")
        #expect(try rows.map { try $0[0].int() } == PostgresSchemaTests.versions)
        for database in databases { await database.close() }
    }

    @Test func largeValuesAreCompressedWithLZ4OrNotAtAll() async throws {
        let server = try await PostgresProcess.shared()
        let uri = try await server.makeDatabase()
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        let database = try await PostgresDatabase.open(.init(uri: uri), on: loop.loop)
        let lz4 = try await database.pool.query(
            "SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
        let rows = try await database.pool.query(
            "SELECT c.relname::text, a.attname::text, a.attcompression::text, a.attstorage::text "
                + "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                + "WHERE c.relname = $1 AND a.attname = $2", [.text("notifications"), .text("signed_payload")])
        #expect(rows.count == 1)
        if try lz4[0][0].int() == 1 {
            #expect(try rows[0][2].string() == "l")
        } else {
            #expect(try rows[0][3].string() == "e")
        }
        // Every large column, the same way.
        for (table, column) in [("subscription_transactions", "jws"), ("subscription_events", "payload")] {
            let column = try await database.pool.query(
                "SELECT a.attcompression::text, a.attstorage::text FROM pg_attribute a "
                    + "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = $1 AND a.attname = $2",
                [.text(table), .text(column)])
            #expect(try column[0][0].string() == rows[0][2].string())
            #expect(try column[0][1].string() == rows[0][3].string())
        }
        await database.close()
    }

    @Test func aDatabaseANewerReleaseMigratedIsRefused() async throws {
        let server = try await PostgresProcess.shared()
        let uri = try await server.makeDatabase()
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        let first = try await PostgresDatabase.open(.init(uri: uri), on: loop.loop)
        _ = try await first.pool.query("INSERT INTO gateway_schema(version, name) VALUES (1000, 'from the future')")
        await first.close()
        let failure = await openingFailure(.init(uri: uri), on: loop)
        #expect(failure?.kind == .corrupt)
        #expect(failure?.message.contains("1000") == true)
    }

    @Test func anUnreachableServerIsUnavailableAndThePasswordIsNeverShown() async throws {
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        var settings = PostgresDatabase.Settings(uri: "postgresql://gateway@127.0.0.1:1/app?connect_timeout=2")
        settings.password = "s3cret-pass"
        let failure = await openingFailure(settings, on: loop)
        #expect(failure?.kind == .unavailable)
        #expect(failure?.message.contains("s3cret-pass") == false)
        #expect(!"\(settings)".contains("s3cret-pass"))
    }

    @Test func aCallOnAnAttachedLoopUsesThatLoopsPoolAndPreparedStatementsFollow() async throws {
        let server = try await PostgresProcess.shared()
        let uri = try await server.makeDatabase()
        let home = try StoreTestLoop()
        let grpc = try StoreTestLoop()
        defer {
            home.stop()
            grpc.stop()
        }
        let database = try await PostgresDatabase.open(.init(uri: uri), on: home.loop)
        try await database.prepare("answer", "SELECT $1::bigint + 1")
        database.attach([grpc.loop])
        let loop = grpc.loop
        let onLoop = try await Task(executorPreference: loop) { () async throws -> Bool in
            // Connected in the background: wait for it (bounded), then the statement runs on this loop's pool.
            for _ in 0..<500 where database.pool === database.home { try await Task.sleep(for: .milliseconds(10)) }
            let pool = database.pool
            let rows = try await pool.execute(prepared: "answer", [.integer(41)])
            let answer = try rows.first?[0].int()
            return pool !== database.home && pool.loop === loop && answer == 42
        }.value
        #expect(onLoop)
        // Off any loop: the store loop's pool.
        #expect(database.pool === database.home)
        await database.close()
    }

    /// Why opening failed; nil when it did not.
    private func openingFailure(_ settings: PostgresDatabase.Settings, on loop: StoreTestLoop) async
        -> NotificationStoreFailure?
    {
        do throws(NotificationStoreFailure) {
            let database = try await PostgresDatabase.open(settings, on: loop.loop)
            await database.close()
            return nil
        } catch {
            return error
        }
    }

    /// 1, 2, … up to this release's newest.
    static let versions: [Int64?] = Array(1...5).map { Int64($0) }
}

/// An event loop on a thread of its own for one test (the store's loop in the gateway).
final class StoreTestLoop: Sendable {
    let loop: EventLoop
    private let thread: LoopThread

    init() throws {
        loop = try EventLoop(index: 0)
        let loop = loop
        thread = spawnThread(name: "store-test-loop") { loop.run() }
    }

    func stop() {
        loop.stop()
        thread.join()
    }
}
