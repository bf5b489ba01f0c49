import GatewayFoundation
import NotificationStore
import Postgres
import TestSupport
import Testing

/// What only the PostgreSQL sink store meets (the contract is `EventSinkStoreTests`): replicas recording one sink
/// at once (a takeover's overlap), rows that do not read back, text PostgreSQL cannot hold, the server going away.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresEventSinkStoreTests {
    static let team = EventSinkStoreTests.team

    @Test func replicasRecordingOneSinkAtOnceNeverMoveItsWatermarkBack() async throws {
        let databases = try await TestDatabases()
        var replicas: [PostgresEventSinkStore] = []
        for _ in 0..<3 { replicas.append(PostgresEventSinkStore(try await databases.open())) }
        _ = try await replicas[0].openSink(Self.team, startingAfter: 0, nowMillis: 1)
        // Each replica records its own interleaved run of watermarks, all at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in replicas.enumerated() {
                group.addTask {
                    for step in 0..<40 {
                        let through = Int64(step * 3 + index)
                        try await store.record(
                            Self.team, EventSinkUpdate(through: through, settled: [through + 1_000, through + 2]))
                    }
                }
            }
            try await group.waitForAll()
        }
        let progress = try await replicas[1].openSink(Self.team, startingAfter: 0, nowMillis: 2)
        #expect(progress.through == 119)
        #expect(progress.settled == Set((0..<120).map { Int64($0) + 1_000 } + [120, 121]))
        await databases.close()
    }

    @Test func aRowThatDoesNotReadBackFailsTheCallAsCorrupt() async throws {
        let databases = try await TestDatabases()
        let database = try await databases.open()
        let store = PostgresEventSinkStore(database)
        _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 1)
        try await store.record(Self.team, EventSinkUpdate(through: 1, deadLetters: [EventSinkStoreTests.letter(1)]))
        _ = try await database.pool.query(
            "ALTER TABLE event_sink_progress ALTER COLUMN through TYPE text USING through::text")
        _ = try await database.pool.query("UPDATE event_sink_progress SET through = 'not a number'")
        _ = try await database.pool.query(
            "ALTER TABLE event_dead_letters ALTER COLUMN attempts TYPE text USING attempts::text")
        _ = try await database.pool.query("UPDATE event_dead_letters SET attempts = '7 times'")
        let opening = await Self.failure { () throws(NotificationStoreFailure) in
            _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 2)
        }
        #expect(opening?.kind == .corrupt)
        let reading = await Self.failure { () throws(NotificationStoreFailure) in
            _ = try await store.deadLetters(Self.team, deadSince: 0, after: 0, limit: 9)
        }
        #expect(reading?.kind == .corrupt)
        await databases.close()
    }

    @Test func aNULInAnErrorOrIdIsStoredAsAReplacementCharacter() async throws {
        let databases = try await TestDatabases()
        let store = PostgresEventSinkStore(try await databases.open())
        _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 1)
        var letter = EventSinkStoreTests.letter(1)
        letter.eventId = "a\u{0}b"
        letter.lastError = "connection failed: \u{0}"
        try await store.record(Self.team, EventSinkUpdate(through: 1, deadLetters: [letter]))
        let read = try await store.deadLetters(Self.team, deadSince: 0, after: 0, limit: 10)
        #expect(read.map(\.eventId) == ["a\u{FFFD}b"])
        #expect(read.map(\.lastError) == ["connection failed: \u{FFFD}"])
        await databases.close()
    }

    /// A server of its own, since it stops it.
    @Test func aServerDownFailsEveryCallUnavailableAndTheStoreComesBackWithIt() async throws {
        let server = try await PostgresProcess.launch()
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        var settings = PostgresDatabase.Settings(uri: try await server.makeDatabase())
        settings.poolSize = 1
        let database = try await PostgresDatabase.open(settings, on: loop.loop)
        let store = PostgresEventSinkStore(database)
        let leases = PostgresFleetLeases(database)
        _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 1)
        try await server.stop(immediately: true)
        let failures: [NotificationStoreFailure?] = [
            await Self.failure { () throws(NotificationStoreFailure) in
                _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 2)
            },
            await Self.failure { () throws(NotificationStoreFailure) in
                try await store.record(Self.team, EventSinkUpdate(through: 1))
            },
            await Self.failure { () throws(NotificationStoreFailure) in _ = try await store.deadLetterCount(Self.team)
            },
            await Self.failure { () throws(NotificationStoreFailure) in
                _ = try await leases.hold("sink", holder: "a", for: .seconds(30))
            },
        ]
        #expect(failures.map { $0?.kind } == [.unavailable, .unavailable, .unavailable, .unavailable])
        try await server.start()
        var recorded = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !recorded, ContinuousClock.now < deadline {
            recorded =
                await Self.failure { () throws(NotificationStoreFailure) in
                    try await store.record(Self.team, EventSinkUpdate(through: 1))
                } == nil
            if !recorded { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recorded)
        #expect(try await store.openSink(Self.team, startingAfter: 0, nowMillis: 3) == EventSinkProgress(through: 1))
        await database.close()
    }

    /// The failure `body` threw, nil when it did not.
    static func failure(_ body: () async throws(NotificationStoreFailure) -> Void) async -> NotificationStoreFailure? {
        do throws(NotificationStoreFailure) {
            try await body()
            return nil
        } catch {
            return error
        }
    }
}
