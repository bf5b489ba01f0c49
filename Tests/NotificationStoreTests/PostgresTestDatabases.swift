import GatewayFoundation
import NotificationStore
import TestSupport

/// A database of its own on the shared test server, and the replicas opened on it: each `open()` is one more
/// replica's `PostgresDatabase` (a pool of one connection on an event loop of its own: the test server takes 40
/// connections for every test running at once). `close()` closes them all and stops their loops.
final class TestDatabases: Sendable {
    let uri: String
    private let opened = Lock<[(database: PostgresDatabase, loop: StoreTestLoop)]>([])

    init() async throws {
        uri = try await PostgresProcess.shared().makeDatabase()
    }

    /// Another replica's database.
    func open() async throws -> PostgresDatabase {
        let loop = try StoreTestLoop()
        var settings = PostgresDatabase.Settings(uri: uri)
        settings.poolSize = 1
        do {
            let database = try await PostgresDatabase.open(settings, on: loop.loop)
            opened.withLock { $0.append((database, loop)) }
            return database
        } catch {
            loop.stop()
            throw error
        }
    }

    func close() async {
        let all = opened.withLock { opened in
            defer { opened = [] }
            return opened
        }
        for (database, loop) in all {
            await database.close()
            loop.stop()
        }
    }
}
