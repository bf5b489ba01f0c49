import Foundation
import GatewayFoundation
import Postgres
import TestSupport
import Testing

@testable import NotificationStore

/// Which notification log a contract test runs against: the SQLite store's behaviours hold for the PostgreSQL
/// one too (PostgreSQL only where a server can be started here).
enum LogKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The kinds this machine can run.
    static var available: [LogKind] { PostgresProcess.available ? allCases : [.sqlite] }

    func make() async throws -> LogFixture {
        switch self {
        case .sqlite:
            let file = try StoreFile()
            return LogFixture(store: try SQLiteNotificationStore(path: file.path), file: file)
        case .postgres:
            let replica = try await PostgresReplica(uri: try await PostgresProcess.shared().makeDatabase())
            return LogFixture(store: replica.store, replica: replica)
        }
    }
}

/// A store under test and what it needs kept alive (and closed) with it.
final class LogFixture: Sendable {
    let store: any NotificationStore
    private let file: StoreFile?
    private let replica: PostgresReplica?

    init(store: any NotificationStore, file: StoreFile? = nil, replica: PostgresReplica? = nil) {
        self.store = store
        self.file = file
        self.replica = replica
    }

    func close() async { await replica?.close() }
}

/// One gateway replica's view of a fleet database: its own event loop, `PostgresDatabase` (a pool of two, so
/// several replicas fit the test server's connections) and started store.
final class PostgresReplica: Sendable {
    let loop: StoreTestLoop
    let database: PostgresDatabase
    let store: PostgresNotificationStore

    init(uri: String, pageBytes: Int = PostgresNotificationStore.defaultPageBytes) async throws {
        loop = try StoreTestLoop()
        var settings = PostgresDatabase.Settings(uri: uri)
        settings.poolSize = 2
        do {
            database = try await PostgresDatabase.open(settings, on: loop.loop)
        } catch {
            loop.stop()
            throw error
        }
        store = PostgresNotificationStore(database: database, pageBytes: pageBytes)
        await store.start()
    }

    func close() async {
        await store.close()
        await database.close()
        loop.stop()
    }
}

/// A notification for the contract tests.
func logEntry(
    _ uuid: String, signedDate: Int64, bundle: String = "com.example", type: String = "DID_RENEW",
    environment: String = "Sandbox", subtype: String = "", payload: String? = nil
) -> NewNotification {
    NewNotification(
        uuid: uuid, signedDate: signedDate, bundleId: bundle, environment: environment, notificationType: type,
        subtype: subtype, signedPayload: payload ?? "jws-\(uuid)")
}

/// The notification log's contract, against the SQLite store and the PostgreSQL one.
@Suite(.serialized) struct NotificationLogContractTests {
    @Test(arguments: LogKind.available)
    func concurrentInsertsAreStoredOnceEachAndRepeatsAreDuplicates(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        let outcomes = try await withThrowingTaskGroup(of: (String, InsertOutcome).self) { group in
            for index in 0..<300 {
                let uuid = "u-\(index % 200)"  // 100 UUIDs twice
                group.addTask {
                    (uuid, try await store.insert(logEntry(uuid, signedDate: Int64(index)), receivedAt: 1))
                }
            }
            return try await group.reduce(into: [(String, InsertOutcome)]()) { $0.append($1) }
        }
        var stored: [String: StorePosition] = [:]
        var duplicates: [(String, StorePosition)] = []
        for (uuid, outcome) in outcomes {
            switch outcome {
            case .stored(let at):
                #expect(stored[uuid] == nil, "\(uuid) stored twice")
                stored[uuid] = at
            case .duplicate(let at): duplicates.append((uuid, at))
            }
        }
        #expect(stored.count == 200)
        #expect(Set(stored.values).count == 200)
        #expect(duplicates.count == 100)
        for (uuid, at) in duplicates { #expect(stored[uuid] == at) }
        let page = try await store.entries(after: .zero, limit: 1000)
        #expect(page.entries.count == 200)
        #expect(page.entries.map(\.position) == page.entries.map(\.position).sorted())
        // At or after every stored position (SQLite's sequence may run ahead of its rows).
        #expect(try await store.lastPosition() >= stored.values.max() ?? .zero)
        await fixture.close()
    }

    @Test(arguments: LogKind.available)
    func insertIsIdempotentByUUIDAndKeepsTheFirstArrival(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        #expect(try await store.lastPosition() == .zero)
        // Quotes, backslashes and any Unicode travel as parameters.
        let odd = logEntry("a'; DROP TABLE notifications; --", signedDate: 10, payload: "jws \\ 'x' \"y\" ü 🍏")
        guard case .stored(let first) = try await store.insert(odd, receivedAt: 100) else {
            Issue.record("the first insert must store")
            return
        }
        guard case .duplicate(let again) = try await store.insert(odd, receivedAt: 200) else {
            Issue.record("the second insert must be a duplicate")
            return
        }
        #expect(first == again)
        let page = try await store.entries(after: .zero, matching: StoreFilter(bundleId: "com.example"), limit: 10)
        #expect(page.entries.map(\.notification) == [odd])
        #expect(page.entries.first?.receivedAt == 100)
        #expect(page.through == first)
        await fixture.close()
    }

    @Test(arguments: LogKind.available)
    func entriesAfterFollowPositionsAndFilters(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        _ = try await store.insert(logEntry("a", signedDate: 30), receivedAt: 1)
        _ = try await store.insert(logEntry("b", signedDate: 10, bundle: "com.other"), receivedAt: 2)
        _ = try await store.insert(logEntry("c", signedDate: 20, type: "REFUND"), receivedAt: 3)
        _ = try await store.insert(
            logEntry("d", signedDate: 40, environment: "Production", subtype: "VOLUNTARY"), receivedAt: 4)
        let app = StoreFilter(bundleId: "com.example")
        let all = try await store.entries(after: .zero, matching: app, limit: 10)
        #expect(all.entries.map(\.notification.uuid) == ["a", "c", "d"])
        let refunds = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example", notificationType: "REFUND"), limit: 10)
        #expect(refunds.entries.map(\.notification.uuid) == ["c"])
        let production = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example", environment: "Production"), limit: 10)
        #expect(production.entries.map(\.notification.uuid) == ["d"])
        let voluntary = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example", subtype: "VOLUNTARY"), limit: 10)
        #expect(voluntary.entries.map(\.notification.uuid) == ["d"])
        // An empty optional filter matches every value, as an unset one does.
        let empty = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example", environment: "", notificationType: ""),
            limit: 10)
        #expect(empty.entries.map(\.notification.uuid) == ["a", "c", "d"])
        let later = try await store.entries(after: all.entries[0].position, matching: app, limit: 1)
        #expect(later.entries.map(\.notification.uuid) == ["c"])
        #expect(later.through == all.entries[1].position)
        let none = try await store.entries(after: all.entries[2].position, matching: app, limit: 10)
        #expect(none.entries.isEmpty)
        #expect(none.through == all.entries[2].position)
        let everyApp = try await store.entries(after: .zero, limit: 10)
        #expect(everyApp.entries.map(\.notification.uuid) == ["a", "b", "c", "d"])
        #expect(try await store.lastPosition() == everyApp.entries.last?.position)
        await fixture.close()
    }

    @Test(arguments: LogKind.available)
    func windowOrdersBySignedDateAndContinuesAfterAKey(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        for (uuid, date) in [("a", 30), ("b", 10), ("c", 20), ("d", 20), ("e", 99), ("f", 9)] {
            _ = try await store.insert(logEntry(uuid, signedDate: Int64(date)), receivedAt: 1)
        }
        _ = try await store.insert(logEntry("g", signedDate: 20, type: "REFUND"), receivedAt: 1)
        let through = try await store.lastPosition()
        let filter = StoreFilter(bundleId: "com.example", notificationType: "DID_RENEW", start: 10, end: 50)
        let first = try await store.window(matching: filter, through: through, after: nil, limit: 2)
        #expect(first.map(\.notification.uuid) == ["b", "c"])
        let rest = try await store.window(matching: filter, through: through, after: first.last?.key, limit: 10)
        #expect(rest.map(\.notification.uuid) == ["d", "a"])
        let snapshot = try await store.window(matching: filter, through: first[0].position, after: nil, limit: 10)
        #expect(snapshot.map(\.notification.uuid) == ["b", "a"], "entries stored after the snapshot are live ones")
        await fixture.close()
    }

    @Test(arguments: LogKind.available)
    func pruneDropsOldEntriesButNeverReusesPositions(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        _ = try await store.insert(logEntry("old", signedDate: 1), receivedAt: 1_000)
        _ = try await store.insert(logEntry("new", signedDate: 2), receivedAt: 5_000)
        #expect(try await store.prune(receivedBefore: 2_000) == 1)
        let before = try await store.lastPosition()
        guard case .stored(let next) = try await store.insert(logEntry("newer", signedDate: 3), receivedAt: 6_000)
        else {
            Issue.record("must store")
            return
        }
        #expect(next > before)
        let found = try await store.positions(ofUUIDs: ["old", "new", "newer"])
        #expect(found["old"] == nil)
        #expect(found["new"] != nil)
        #expect(found["newer"] == next)
        // Pruning everything keeps the newest position.
        #expect(try await store.prune(receivedBefore: Int64.max) == 2)
        #expect(try await store.lastPosition() == next)
        #expect(try await store.entries(after: .zero, limit: 10).entries.isEmpty)
        await fixture.close()
    }

    @Test(arguments: LogKind.available)
    func positionsOfManyUUIDsAreFoundAcrossBatches(_ kind: LogKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        let count = NotificationStoreLimits.lookupBatch * 2 + 7
        let stored = try await withThrowingTaskGroup(of: (String, StorePosition?).self) { group in
            for index in 0..<count {
                group.addTask {
                    let outcome = try await store.insert(
                        logEntry("u-\(index)", signedDate: Int64(index)), receivedAt: 1)
                    guard case .stored(let position) = outcome else { return ("u-\(index)", nil) }
                    return ("u-\(index)", position)
                }
            }
            return try await group.reduce(into: [String: StorePosition]()) { $0[$1.0] = $1.1 }
        }
        #expect(stored.count == count)
        let asked = ["absent"] + (0..<count).map { "u-\($0)" } + ["also-absent"]
        #expect(try await store.positions(ofUUIDs: asked) == stored)
        #expect(try await store.positions(ofUUIDs: []).isEmpty)
        await fixture.close()
    }
}

/// What only the fleet's store does: replicas sharing one log, waking each other, bounded reads of huge entries,
/// and the server going away and coming back.
@Suite(.serialized, .enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresNotificationStoreTests {
    /// Replicas insert at once (some of them the same notifications, as Apple's retries reach any replica) while a
    /// follower on each reads after the last position it saw: every follower ends with every entry once, in
    /// position order, never having skipped one committed late below what it had seen.
    @Test(arguments: [2, 3])
    func replicasInsertingTogetherAreReadByEveryReplicaOnceInOrder(_ count: Int) async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        var replicas: [PostgresReplica] = []
        for _ in 0..<count { replicas.append(try await PostgresReplica(uri: uri)) }
        let perReplica = 400
        let writing = WritersRunning()
        let followers = replicas.map { replica in
            Task { () throws -> [StoredNotification] in
                var seen: [StoredNotification] = []
                var position = StorePosition.zero
                while true {
                    let writersDone = !writing.value
                    let page = try await replica.store.entries(after: position, limit: 37)
                    seen += page.entries
                    position = page.through
                    if writersDone && page.entries.isEmpty { return seen }
                    if page.entries.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
                }
            }
        }
        let outcomes = try await withThrowingTaskGroup(of: (String, InsertOutcome).self) { group in
            for (index, replica) in replicas.enumerated() {
                for number in 0..<perReplica {
                    // A third of each replica's UUIDs are the next replica's too.
                    let uuid = number % 3 == 0 ? "shared-\(number)" : "r\(index)-\(number)"
                    let store = replica.store
                    group.addTask {
                        (uuid, try await store.insert(logEntry(uuid, signedDate: Int64(number)), receivedAt: 7))
                    }
                }
            }
            return try await group.reduce(into: [(String, InsertOutcome)]()) { $0.append($1) }
        }
        writing.finish()
        var positions: [String: StorePosition] = [:]
        for (uuid, outcome) in outcomes {
            switch outcome {
            case .stored(let at), .duplicate(let at):
                #expect(positions[uuid] == nil || positions[uuid] == at, "\(uuid) at two positions")
                positions[uuid] = at
            }
        }
        let storedCount = outcomes.filter { if case .stored = $0.1 { true } else { false } }.count
        #expect(storedCount == positions.count)
        let expected = positions.sorted { $0.value < $1.value }.map(\.key)
        for follower in followers {
            let seen = try await follower.value
            #expect(seen.map(\.notification.uuid) == expected)
        }
        for replica in replicas {
            #expect(try await replica.store.lastPosition() == positions.values.max())
            await replica.close()
        }
    }

    /// A writer that allocated its position and has not committed yet (slow, or on a replica far away) holds back
    /// every later writer, so no reader can see a later position before it: reading "after" the later one would
    /// skip it for ever.
    @Test func anUncommittedPositionHoldsBackLaterOnes() async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        let a = try await PostgresReplica(uri: uri)
        let b = try await PostgresReplica(uri: uri)
        let (allocated, allocatedContinuation) = AsyncStream<Void>.makeStream()
        // Replica A's writer as the store runs it (the log's lock, then the position), held open for a while.
        let slow = Task { () throws -> Int64? in
            try await a.database.pool.transaction { transaction in
                _ = try await transaction.query(
                    "SELECT pg_advisory_xact_lock($1)", [.integer(PostgresNotificationStore.lockKey)])
                let rows = try await transaction.query(
                    """
                    INSERT INTO notifications(uuid, signed_date, received_at, bundle_id, environment, notification_type,
                      subtype, signed_payload) VALUES ($1, 1, 1, $2, 'Sandbox', 'TEST', '', 'p') RETURNING position
                    """, [.text("slow"), .text("com.example")])
                allocatedContinuation.finish()
                try await Task.sleep(for: .milliseconds(600))
                return try rows.first?[0].int()
            }
        }
        for await _ in allocated {}
        let fast = Task { try await b.store.insert(logEntry("fast", signedDate: 2), receivedAt: 2) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await b.store.entries(after: .zero, limit: 10).entries.isEmpty, "a later entry is visible")
        #expect(try await b.store.lastPosition() == .zero)
        let slowPosition = try #require(try await slow.value)
        guard case .stored(let fastPosition) = try await fast.value else {
            Issue.record("the fast insert did not store")
            return
        }
        #expect(fastPosition.major > UInt64(slowPosition))
        #expect(
            try await a.store.entries(after: .zero, limit: 10).entries.map(\.notification.uuid) == ["slow", "fast"])
        await a.close()
        await b.close()
    }

    @Test func aFollowerOnOneReplicaIsWokenByAnInsertOnAnother() async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        let a = try await PostgresReplica(uri: uri)
        let b = try await PostgresReplica(uri: uri)
        for round in 0..<3 {
            let seen = b.store.signal.generation
            let started = ContinuousClock.now
            let waiter = Task { await b.store.signal.wait(past: seen, timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(20))
            _ = try await a.store.insert(logEntry("wake-\(round)", signedDate: 1), receivedAt: 1)
            await waiter.value
            let waited = ContinuousClock.now - started
            #expect(b.store.signal.generation != seen)
            #expect(waited < .seconds(5), "woken after \(waited), not by the notification")
        }
        #expect(b.store.isShared)
        await a.close()
        await b.close()
    }

    /// Huge payloads: a read by position stops once its payloads pass `pageBytes` (one entry at least) and the
    /// next read continues after it; a catch-up window is never cut short.
    @Test func readsOfHugeEntriesStayWithinTheirBoundsAndMissNothing() async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        let replica = try await PostgresReplica(uri: uri, pageBytes: 1 << 20)
        let store = replica.store
        let size = 300 * 1024
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".utf8)
        var inserted: [NewNotification] = []
        for index in 0..<12 {
            let payload = String(decoding: (0..<size).map { alphabet[($0 + index) % alphabet.count] }, as: UTF8.self)
            let entry = logEntry("big-\(index)", signedDate: Int64(100 - index), payload: payload)
            _ = try await store.insert(entry, receivedAt: 1)
            inserted.append(entry)
        }
        // A bigger one than the budget alone is still read.
        let giant = logEntry("giant", signedDate: 1, payload: String(repeating: "G", count: 3 << 20))
        _ = try await store.insert(giant, receivedAt: 1)
        inserted.append(giant)
        var read: [NewNotification] = []
        var pages: [Int] = []
        var position = StorePosition.zero
        while true {
            let page = try await store.entries(
                after: position, matching: StoreFilter(bundleId: "com.example"), limit: 256)
            if page.entries.isEmpty { break }
            pages.append(page.entries.count)
            read += page.entries.map(\.notification)
            position = page.through
        }
        #expect(read == inserted)
        // 1 MiB of 300 KiB payloads: four entries start below the budget.
        #expect(pages == [4, 4, 4, 1])
        let all = try await store.entries(after: .zero, limit: 256)
        #expect(all.entries.count == 4)
        let window = try await store.window(
            matching: StoreFilter(bundleId: "com.example"), through: try await store.lastPosition(), after: nil,
            limit: 50)
        #expect(window.map(\.notification) == inserted.sorted { $0.signedDate < $1.signedDate })
        await replica.close()
    }

    /// What the database holds that does not read back fails the call `.corrupt`; nothing traps.
    @Test func aDamagedHeadIsCorruptNotACrash() async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        let replica = try await PostgresReplica(uri: uri)
        _ = try await replica.database.pool.query("UPDATE notification_log_head SET last_position = -3")
        #expect(await lastPositionFailure(replica.store)?.kind == .corrupt)
        _ = try await replica.database.pool.query("DELETE FROM notification_log_head")
        #expect(await lastPositionFailure(replica.store)?.kind == .corrupt)
        await replica.close()
    }

    private func lastPositionFailure(_ store: PostgresNotificationStore) async -> NotificationStoreFailure? {
        do throws(NotificationStoreFailure) {
            _ = try await store.lastPosition()
            return nil
        } catch {
            return error
        }
    }

    /// A notification PostgreSQL cannot store (a NUL character) fails alone, not the group it arrived with.
    @Test func aNotificationWithANULFailsAloneNotItsGroup() async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        let replica = try await PostgresReplica(uri: uri)
        let store = replica.store
        let results = await withTaskGroup(of: (String, Bool).self) { group in
            for index in 0..<20 {
                let uuid = index == 7 ? "nul-\u{0}" : "ok-\(index)"
                group.addTask { (uuid, (try? await store.insert(logEntry(uuid, signedDate: 1), receivedAt: 1)) != nil) }
            }
            return await group.reduce(into: [String: Bool]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.filter(\.value).count == 19)
        #expect(results["nul-\u{0}"] == false)
        #expect(try await store.positions(ofUUIDs: ["nul-\u{0}", "ok-1"]).keys.sorted() == ["ok-1"])
        #expect(
            try await store.entries(after: .zero, matching: StoreFilter(bundleId: "com.\u{0}"), limit: 10).entries
                .isEmpty)
        await replica.close()
    }

    /// The server stops: inserts fail `.unavailable` (the webhook answers 503). It starts again: inserts work
    /// within about a second without reopening anything, and the other replica's listener, which reconnected, is
    /// woken by them again.
    @Test func aServerThatStopsAndComesBackIsUnavailableThenUsedAgain() async throws {
        let server = try await PostgresProcess.launch()
        let uri = try await server.makeDatabase()
        let a = try await PostgresReplica(uri: uri)
        let b = try await PostgresReplica(uri: uri)
        _ = try await a.store.insert(logEntry("before", signedDate: 1), receivedAt: 1)
        try await server.stop(immediately: true)
        for attempt in 0..<3 {
            do throws(NotificationStoreFailure) {
                _ = try await a.store.insert(logEntry("down-\(attempt)", signedDate: 1), receivedAt: 1)
                Issue.record("an insert succeeded with the server down")
            } catch {
                #expect(error.kind == .unavailable)
            }
            await #expect(throws: NotificationStoreFailure.self) { _ = try await b.store.lastPosition() }
        }
        try await server.start()
        let restarted = ContinuousClock.now
        var stored: StorePosition?
        while stored == nil && ContinuousClock.now - restarted < .seconds(10) {
            if case .stored(let at) = try? await a.store.insert(logEntry("after", signedDate: 2), receivedAt: 2) {
                stored = at
            } else {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let back = ContinuousClock.now - restarted
        #expect(stored != nil)
        #expect(back < .seconds(3), "inserts worked again \(back) after the restart")
        // B's listener is back too: a wait ends on A's next insert, long before any timeout.
        try await Task.sleep(for: .milliseconds(1_500))
        let seen = b.store.signal.generation
        let started = ContinuousClock.now
        let waiter = Task { await b.store.signal.wait(past: seen, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(20))
        _ = try await a.store.insert(logEntry("woken", signedDate: 3), receivedAt: 3)
        await waiter.value
        #expect(ContinuousClock.now - started < .seconds(5))
        let page = try await b.store.entries(after: .zero, limit: 10)
        #expect(page.entries.map(\.notification.uuid) == ["before", "after", "woken"])
        await a.close()
        await b.close()
    }

    /// Group commit under concurrent webhook requests: reports inserts per second (a figure for the record, not
    /// an assertion: machines differ).
    @Test(arguments: [1, 3])
    func insertThroughputWithConcurrentRequests(_ replicaCount: Int) async throws {
        let uri = try await PostgresProcess.shared().makeDatabase()
        var replicas: [PostgresReplica] = []
        for _ in 0..<replicaCount { replicas.append(try await PostgresReplica(uri: uri)) }
        let total = 6_000
        let concurrency = 200
        let stores = replicas.map(\.store)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let store = stores[worker % stores.count]
                group.addTask {
                    for index in stride(from: worker, to: total, by: concurrency) {
                        _ = try await store.insert(
                            logEntry(
                                "t-\(index)", signedDate: Int64(index), payload: String(repeating: "x", count: 2_000)),
                            receivedAt: 1)
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "PostgresNotificationStore throughput: \(total) inserts, \(concurrency) concurrent, \(replicaCount) "
                + "replica(s): \(Int(Double(total) / seconds)) inserts/s")
        #expect(try await stores[0].entries(after: .zero, limit: 10_000).entries.count == total)
        for replica in replicas { await replica.close() }
    }
}

/// Whether a test's writers still run, for readers on other tasks.
final class WritersRunning: Sendable {
    private let running = Lock(true)
    var value: Bool { running.withLock { $0 } }
    func finish() { running.withLock { $0 = false } }
}
