import EventLoops
import Foundation
import GatewayFoundation
import Postgres
import ProtoCodec
import SubscriptionState
import TestSupport
import Testing

@testable import NotificationStore

/// A fresh database on the shared test server, opened as a fleet replica opens it (its own pool), on a loop the
/// PostgreSQL contract tests share; closed when the value goes. One connection, taken from
/// `PostgresTestConnections`: the test server takes 40 clients, and every suite's tests run at once.
final class PostgresStoreFixture: Sendable {
    let database: PostgresDatabase

    init() async throws {
        await PostgresTestConnections.shared.acquire(1)
        do {
            var settings = PostgresDatabase.Settings(uri: try await PostgresProcess.shared().makeDatabase())
            settings.poolSize = 1
            database = try await PostgresDatabase.open(settings, on: Self.sharedLoop.get().loop)
        } catch {
            PostgresTestConnections.shared.release(1)
            throw error
        }
    }

    deinit {
        let database = database
        Task {
            await database.close()
            PostgresTestConnections.shared.release(1)
        }
    }

    /// The contract tests' loop, running until the process ends.
    private static let sharedLoop = Result { try StoreTestLoop() }
}

/// How many connections this target's PostgreSQL store tests hold on the shared server at once: a test takes
/// what it opens before opening it (all at once, so two tests never wait on each other) and gives it back once
/// closed; the others wait their turn. Leaves the rest of the server's 40 to the other suites.
final class PostgresTestConnections: Sendable {
    static let shared = PostgresTestConnections(capacity: 12)

    private struct State {
        var free: Int
        var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state: Lock<State>

    init(capacity: Int) { state = Lock(State(free: capacity)) }

    /// Returns once `count` connections are free (in the order asked), and takes them.
    func acquire(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.waiting.isEmpty, state.free >= count else {
                    state.waiting.append((count, continuation))
                    return false
                }
                state.free -= count
                return true
            }
            if now { continuation.resume() }
        }
    }

    /// Gives `count` connections back, waking whoever they let go on.
    func release(_ count: Int) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.free += count
            var woken: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiting.first, first.count <= state.free {
                state.free -= first.count
                woken.append(first.continuation)
                state.waiting.removeFirst()
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }
}

/// The PostgreSQL store as a fleet uses it: several replicas (each its own `PostgresDatabase`, pool and loop) on
/// one database, applying changes to the same subscriptions at once and following each other's events.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresSubscriptionStoreTests {
    typealias S = StateSnapshots

    static let context = SubscriptionEventContext(
        app: "reader",
        policy: SubscriptionPolicy(entitlements: ["pro": ["reader.monthly"], "all": ["reader.lifetime"]]),
        cause: "uuid-1")

    /// `count` replicas of one new database, each with its own loop and a pool of two.
    static func replicas(_ count: Int) async throws -> (stores: [PostgresSubscriptionStore], keep: [AnyObject]) {
        await PostgresTestConnections.shared.acquire(2 * count)
        var stores: [PostgresSubscriptionStore] = []
        var keep: [AnyObject] = []
        do {
            var settings = PostgresDatabase.Settings(uri: try await PostgresProcess.shared().makeDatabase())
            settings.poolSize = 2
            for _ in 0..<count {
                let loop = try StoreTestLoop()
                let database = try await PostgresDatabase.open(settings, on: loop.loop)
                keep.append(LoopStopper(loop, after: database))
                stores.append(try await PostgresSubscriptionStore(database))
            }
        } catch {
            // Those opened give theirs back when they go.
            PostgresTestConnections.shared.release(2 * (count - keep.count))
            throw error
        }
        return (stores, keep)
    }

    /// One subscription's snapshots as they may arrive from anywhere: renewals, a refund, renewal infos (one that
    /// turns auto-renew off, one in billing retry), a duplicate, and a one-time purchase and its refund.
    static func snapshots(of original: String) throws -> [SubscriptionChange] {
        let purchase = "p-" + original
        return try [
            S.change(
                S.transaction("a", original: original, signed: 1), S.renewal(original: original, signed: 1), now: 1,
                events: context),
            S.change(
                S.transaction("b", original: original, purchased: 30 * S.day, expires: 60 * S.day, signed: 2), now: 1,
                events: context),
            S.change(
                nil, S.renewal(original: original, autoRenew: false, signed: 3), key: S.key(original), now: 1,
                events: context),
            S.change(
                S.transaction("c", original: original, purchased: 60 * S.day, expires: 90 * S.day, signed: 4),
                S.renewal(original: original, signed: 4), now: 1, events: context),
            S.change(
                S.transaction(
                    "b", original: original, purchased: 30 * S.day, expires: 60 * S.day, signed: 6, revoked: 5),
                now: 1, events: context),
            S.change(
                nil, S.renewal(original: original, inBillingRetry: true, signed: 7), key: S.key(original), now: 1,
                events: context),
            S.change(S.transaction("a", original: original, signed: 1), now: 1, events: context),
            S.change(
                S.transaction(
                    "c", original: original, purchased: 60 * S.day, expires: 90 * S.day, signed: 8, token: "NEW"),
                now: 1, events: context),
            S.change(
                S.transaction(
                    purchase, original: purchase, product: "reader.lifetime", expires: nil, signed: 1,
                    type: .nonConsumable, token: "NEW"), now: 1, events: context),
            S.change(
                S.transaction(
                    purchase, original: purchase, product: "reader.lifetime", expires: nil, signed: 9, revoked: 9,
                    type: .nonConsumable, token: "NEW"), now: 1, events: context),
        ]
    }

    /// Three replicas apply three subscriptions' snapshots at once, shuffled, in batches mixing subscriptions (in
    /// another order on each replica), many times: each record ends as one store applying them in order left it
    /// (its version aside: how many snapshots changed it depends on their order), and each subscription's
    /// events are numbered 1, 2, … without a gap or a repeat, each event kept once.
    @Test func replicasApplyingOneSubscriptionAtOnceNeverRegressIt() async throws {
        let (replicas, keep) = try await Self.replicas(3)
        defer { withExtendedLifetime(keep) {} }
        var generator = SystemRandomNumberGenerator()
        for iteration in 0..<20 {
            let originals = (0..<3).map { "o\(iteration)-\($0)" }
            var changes: [SubscriptionChange] = []
            for original in originals { changes += try Self.snapshots(of: original) }
            let reference = MemorySubscriptionStore()
            for change in changes { _ = try await reference.apply(change) }

            var batches: [[SubscriptionChange]] = []
            var shuffled = changes.shuffled(using: &generator)
            while !shuffled.isEmpty {
                let size = Int.random(in: 1...4, using: &generator)
                batches.append(Array(shuffled.prefix(size)))
                shuffled.removeFirst(min(size, shuffled.count))
            }
            let made = try await withThrowingTaskGroup(of: [AppliedChange].self) { group in
                for (index, batch) in batches.enumerated() {
                    let replica = replicas[index % replicas.count]
                    group.addTask { try await replica.apply(batch, projectedThrough: nil) }
                }
                var made: [AppliedChange] = []
                for try await applied in group { made += applied }
                return made
            }

            for original in originals {
                let expected = try #require(try await reference.record(S.key(original)))
                for replica in replicas {
                    let record = try #require(try await replica.record(S.key(original)))
                    #expect(record.transactions == expected.transactions)
                    #expect(record.renewalInfo == expected.renewalInfo)
                    #expect(record.updatedAtMillis == expected.updatedAtMillis)
                    #expect(record.source == expected.source)
                }
                let purchases = try await replicas[0].customer(S.key("p-" + original)).purchases
                #expect(purchases == (try await reference.customer(S.key("p-" + original)).purchases))
            }
            let ids = Set(originals.flatMap { [$0, "p-" + $0] })
            let stored = try await replicas[1].events(after: 0, bundleId: nil, limit: 10_000)
                .filter { ids.contains($0.event.originalTransactionId) }
            let returned = made.flatMap(\.events)
            #expect(Set(stored.map(\.event.eventId)).count == stored.count)
            #expect(Set(stored.map(\.event.eventId)) == Set(returned.map(\.eventId)))
            #expect(stored.count == returned.count)
            for original in originals {
                for id in [original, "p-" + original] {
                    let sequences = stored.filter { $0.event.originalTransactionId == id }
                        .map(\.event.sequence)
                    #expect(!sequences.isEmpty)
                    #expect(sequences == Array(1...UInt64(sequences.count)), "\(id): \(sequences)")
                }
            }
        }
    }

    /// GetSubscription's reads issued together on one loop (a pass of gRPC calls) share statements
    /// (`PostgresPool.lookup`), and each still gets exactly its own record: unstamped, stamped and unchanged,
    /// stamped and changed since, and unknown ids, mixed; a record with several transactions, one of renewal info
    /// alone, and ids a text array must quote.
    @Test func readsIssuedTogetherShareStatementsAndEachGetsItsOwnRecord() async throws {
        let (stores, keep) = try await Self.replicas(1)
        defer { withExtendedLifetime(keep) {} }
        let store = stores[0]
        let stopper = try #require(keep.first as? LoopStopper)
        let originals = (0..<60).map { "o\($0)" } + ["with,comma", "with \"quote\"", "{brace}", "NULL"]
        for (index, original) in originals.enumerated() {
            if index % 7 == 3 {
                _ = try await store.apply(
                    S.change(nil, S.renewal(original: original, signed: 2), key: S.key(original), now: 1))
                continue
            }
            _ = try await store.apply(
                S.change(
                    S.transaction("a-" + original, original: original, signed: 1),
                    S.renewal(original: original, signed: 1), now: 1))
            if index.isMultiple(of: 3) {
                _ = try await store.apply(
                    S.change(
                        S.transaction(
                            "b-" + original, original: original, purchased: 30 * S.day, expires: 60 * S.day,
                            signed: 2), now: 2))
            }
        }
        var stamps: [String: RecordStamp] = [:]
        for original in originals {
            guard case .record(_, let stamp) = try await store.currentRecord(S.key(original), unlessStamped: nil)
            else {
                Issue.record("\(original) must be stored")
                return
            }
            stamps[original] = stamp
        }
        // A third of them change after their stamp was taken.
        for original in originals.enumerated().filter({ $0.offset % 3 == 1 }).map(\.element) {
            _ = try await store.apply(
                S.change(nil, S.renewal(original: original, autoRenew: false, signed: 50), key: S.key(original), now: 3)
            )
        }
        var expected: [String: SubscriptionRecord] = [:]
        for original in originals { expected[original] = try await store.currentRecord(S.key(original)) }
        let unknown = (0..<10).map { "unknown-\($0)" }
        let before = try await statementsSent(store)
        let taken = stamps
        let reads = try await Task(executorPreference: stopper.loop.loop) {
            try await withThrowingTaskGroup(of: (String, Bool, CurrentRead).self) { group in
                for original in originals + unknown {
                    for stamped in [false, true] {
                        group.addTask {
                            let read = try await store.currentRecord(
                                S.key(original), unlessStamped: stamped ? taken[original] : nil)
                            return (original, stamped, read)
                        }
                    }
                }
                var reads: [(String, Bool, CurrentRead)] = []
                for try await read in group { reads.append(read) }
                return reads
            }
        }.value
        let sent = try await statementsSent(store) - before
        #expect(reads.count == 2 * (originals.count + unknown.count))
        for (original, stamped, read) in reads {
            guard let record = expected[original] else {
                #expect(read.isMissing, "\(original)")
                continue
            }
            if stamped, RecordStamp(record) == stamps[original] {
                #expect(read.isUnchanged, "\(original)")
                continue
            }
            guard case .record(let found, let stamp) = read else {
                Issue.record("\(original) (stamped: \(stamped)) must be read, not \(read)")
                continue
            }
            #expect(found == record, "\(original)")
            #expect(stamp == RecordStamp(record), "\(original)")
        }
        // 148 reads: a few statements (stamps, then the records), never one each.
        #expect(sent >= 2 && sent <= 20, "\(sent) statements for \(reads.count) reads")
    }

    private func statementsSent(_ store: PostgresSubscriptionStore) async throws -> Int {
        var total = 0
        for connection in store.database.pool.connections { total += await connection.statistics().statementsSent }
        return total
    }

    /// A follower on one replica reads every event all three replicas make while they make them: each once, in
    /// position order, none skipped (positions become visible in order).
    @Test func aFollowerOnOneReplicaSeesEveryReplicasEventsOnceInOrder() async throws {
        let (replicas, keep) = try await Self.replicas(3)
        defer { withExtendedLifetime(keep) {} }
        let done = Lock(false)
        let writers = Task {
            defer { done.withLock { $0 = true } }
            return try await withThrowingTaskGroup(of: [SubscriptionEvent].self) { group in
                for (index, replica) in replicas.enumerated() {
                    group.addTask {
                        var made: [SubscriptionEvent] = []
                        for round in 0..<40 {
                            let original = "r\(index)-\(round)"
                            for applied in try await replica.apply(
                                [
                                    try S.change(
                                        S.transaction("t", original: original, signed: 1), now: 1,
                                        events: Self.context),
                                    try S.change(
                                        S.transaction("t", original: original, signed: 2, revoked: 2), now: 1,
                                        events: Self.context),
                                ], projectedThrough: nil)
                            {
                                made += applied.events
                            }
                        }
                        return made
                    }
                }
                var made: [SubscriptionEvent] = []
                for try await events in group { made += events }
                return made
            }
        }
        let follower = replicas[0]
        var seen: [StoredSubscriptionEvent] = []
        var after: Int64 = 0
        while true {
            // Read before the page: once the writers are done and a page after that comes back empty, the
            // follower has read everything.
            let finished = done.withLock { $0 }
            let generation = follower.eventSignal.generation
            let page = try await follower.events(after: after, bundleId: S.bundleId, limit: 7)
            seen += page
            after = page.last?.position ?? after
            if page.isEmpty {
                if finished { break }
                await follower.eventSignal.wait(past: generation, timeout: .milliseconds(50))
            }
        }
        let made = try await writers.value
        #expect(seen.count == made.count)
        #expect(Set(seen.map(\.event.eventId)) == Set(made.map(\.eventId)))
        #expect(seen.map(\.position) == seen.map(\.position).sorted())
        #expect(Set(seen.map(\.position)).count == seen.count)
        // The counter hands positions out without a gap: 1, 2, … in commit order.
        #expect(seen.map(\.position) == Array(1...Int64(made.count)))
    }

    /// Another replica's events raise this replica's signal (its commits `pg_notify`, every store listens).
    @Test func anotherReplicasEventsRaiseTheSignal() async throws {
        let (replicas, keep) = try await Self.replicas(2)
        defer { withExtendedLifetime(keep) {} }
        let seen = replicas[0].eventSignal.generation
        _ = try await replicas[1].apply(
            S.change(S.transaction("t1", original: "o1", signed: 1), now: 1, events: Self.context))
        await replicas[0].eventSignal.wait(past: seen, timeout: .seconds(10))
        #expect(replicas[0].eventSignal.generation != seen)
    }

    /// A rebuild's `removeAll` on one replica while another applies batches: the two may deadlock (the server
    /// rolls one back, which is run again), but every call succeeds and no record is left without its ledger.
    @Test func removeAllMeetingAppliesRetriesAndLeavesNoHalfRecord() async throws {
        let (replicas, keep) = try await Self.replicas(2)
        defer { withExtendedLifetime(keep) {} }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<12 {
                    let batch = try (0..<4).map { index in
                        try S.change(
                            S.transaction("t\(round)", original: "o\((round + index) % 5)", signed: Int64(round)),
                            S.renewal(original: "o\((round + index) % 5)", signed: Int64(round)), now: 1,
                            events: Self.context)
                    }
                    _ = try await replicas[0].apply(batch.shuffled(), projectedThrough: nil)
                }
            }
            group.addTask {
                for _ in 0..<4 {
                    try await replicas[1].removeAll()
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            try await group.waitForAll()
        }
        for key in try await replicas[1].recordKeys(after: nil, limit: 100) {
            let record = try #require(try await replicas[1].record(key))
            #expect(!record.transactions.isEmpty)
            #expect(record.renewalInfo != nil)
        }
    }

    /// Replicas projecting at once never move the projected position back.
    @Test func theProjectedPositionNeverMovesBack() async throws {
        let (replicas, keep) = try await Self.replicas(2)
        defer { withExtendedLifetime(keep) {} }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for major in (1...60).shuffled() {
                let replica = replicas[major % 2]
                group.addTask {
                    try await replica.setProjectedThrough(StorePosition(major: UInt64(major), minor: UInt64(major)))
                }
            }
            try await group.waitForAll()
        }
        #expect(try await replicas[0].projectedThrough() == StorePosition(major: 60, minor: 60))
        try await replicas[1].setProjectedThrough(StorePosition(major: 59, minor: UInt64.max))
        _ = try await replicas[1].apply([], projectedThrough: StorePosition(major: 3))
        #expect(try await replicas[0].projectedThrough() == StorePosition(major: 60, minor: 60))
        try await replicas[0].removeAll()
        #expect(try await replicas[1].projectedThrough() == .zero)
    }

    /// A row that does not decode fails the call that reads it `.corrupt`; the other records still read.
    @Test func aDamagedRowFailsItsReadOnly() async throws {
        let fixture = try await PostgresStoreFixture()
        let store = try await PostgresSubscriptionStore(fixture.database)
        _ = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1)))
        _ = try await store.apply(S.change(S.transaction("t2", original: "o2", signed: 1)))
        _ = try await fixture.database.pool.query(
            "UPDATE subscription_transactions SET payload = $1 WHERE original_transaction_id = 'o1'",
            [.bytes([0xFF, 0xFF, 0xFF])])
        _ = try await fixture.database.pool.query(
            "UPDATE subscription_records SET source = 'elsewhere' WHERE original_transaction_id = 'o2'")
        for original in ["o1", "o2"] {
            do throws(NotificationStoreFailure) {
                _ = try await store.record(S.key(original))
                Issue.record("the damaged record \(original) read back")
            } catch {
                #expect(error.kind == .corrupt)
            }
            await #expect(throws: NotificationStoreFailure.self) {
                _ = try await store.apply(S.change(S.transaction("t9", original: original, signed: 9)))
            }
        }
        _ = try await store.apply(S.change(S.transaction("t3", original: "o3", signed: 1)))
        #expect(try await store.record(S.key("o3"))?.version == 1)
    }

    /// The analysts' view shows Apple's status, and a role granted SELECT on it alone reads it and nothing else
    /// (docs/subscription-state.md, "PostgreSQL").
    @Test func theAnalystsViewReadsWithItsOwnGrantOnly() async throws {
        let fixture = try await PostgresStoreFixture()
        let store = try await PostgresSubscriptionStore(fixture.database)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try await store.apply(
            S.change(
                S.transaction("t1", original: "active", expires: now - S.t0 + S.day, signed: 1, token: "T"),
                S.renewal(original: "active", signed: 1)))
        _ = try await store.apply(S.change(S.transaction("t2", original: "expired", signed: 1)))
        _ = try await store.apply(S.change(S.transaction("t3", original: "refunded", signed: 2, revoked: 1)))
        let pool = fixture.database.pool
        let rows = try await pool.query(
            "SELECT original_transaction_id, status, status_name, auto_renew, expires_at::text, app_account_token "
                + "FROM subscription_state ORDER BY original_transaction_id")
        #expect(
            try rows.map { try [$0[0].string(), $0[1].string(), $0[2].string()] } == [
                ["active", "1", "active"], ["expired", "2", "expired"], ["refunded", "5", "revoked"],
            ])
        #expect(try rows[0][3].bool() == true)
        #expect(try rows[1][4].string() == "2023-12-14 22:13:20")
        #expect(try rows[0][5].string() == "T")

        // The role's name is made here (an identifier cannot be a parameter); roles are the server's, not the
        // database's, so each run makes its own.
        let role = "analyst_" + String(UInt64.random(in: 1...UInt64.max), radix: 36)
        _ = try await pool.query("CREATE ROLE \(role) NOLOGIN")
        _ = try await pool.query("GRANT USAGE ON SCHEMA public TO \(role)")
        _ = try await pool.query("GRANT SELECT ON subscription_state TO \(role)")
        let count = try await pool.transaction { transaction in
            _ = try await transaction.query("SET LOCAL ROLE \(role)")
            return try await transaction.query("SELECT count(*) FROM subscription_state")[0][0].int()
        }
        #expect(count == 3)
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { transaction in
                _ = try await transaction.query("SET LOCAL ROLE \(role)")
                _ = try await transaction.query("SELECT count(*) FROM subscription_records")
            }
        }
        _ = try await pool.query("DROP OWNED BY \(role)")
        _ = try await pool.query("DROP ROLE \(role)")
    }

    /// The server stopping fails every call `.unavailable` (the webhook answers 503, reads UNAVAILABLE); once
    /// it is back the same store works again without being reopened, and still hears other replicas' events.
    @Test func aStoppedServerIsUnavailableAndTheStoreComesBackWithIt() async throws {
        let server = try await PostgresProcess.launch()
        let loop = try StoreTestLoop()
        defer { loop.stop() }
        var settings = PostgresDatabase.Settings(uri: try await server.makeDatabase())
        settings.poolSize = 2
        settings.statementTimeout = .seconds(5)
        let database = try await PostgresDatabase.open(settings, on: loop.loop)
        let store = try await PostgresSubscriptionStore(database)
        _ = try await store.apply(S.change(S.transaction("t1", original: "o1", signed: 1)))

        try await server.stop(immediately: true)
        do throws(NotificationStoreFailure) {
            _ = try await store.record(S.key("o1"))
            Issue.record("a read succeeded with the server stopped")
        } catch {
            #expect(error.kind == .unavailable)
        }
        let change = try S.change(S.transaction("t2", original: "o1", purchased: 30 * S.day, signed: 2))
        do throws(NotificationStoreFailure) {
            _ = try await store.apply(change)
            Issue.record("an apply succeeded with the server stopped")
        } catch {
            #expect(error.kind == .unavailable)
        }

        let beforeRestart = store.eventSignal.generation
        try await server.start()
        let deadline = ContinuousClock.now + .seconds(20)
        var applied: AppliedChange?
        while applied == nil, ContinuousClock.now < deadline {
            applied = try? await store.apply(change)
            if applied == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(applied?.record?.version == 2)
        #expect(try await store.record(S.key("o1"))?.transactions.count == 2)

        // The listening connection listened again (the reconnect itself raised the signal); another replica's
        // events reach it.
        await store.eventSignal.wait(past: beforeRestart, timeout: .seconds(10))
        #expect(store.eventSignal.generation != beforeRestart)
        let other = try await PostgresDatabase.open(settings, on: loop.loop)
        let otherStore = try await PostgresSubscriptionStore(other)
        let seen = store.eventSignal.generation
        _ = try await otherStore.apply(
            S.change(S.transaction("x1", original: "x", signed: 1), now: 1, events: Self.context))
        await store.eventSignal.wait(past: seen, timeout: .seconds(10))
        #expect(store.eventSignal.generation != seen)
        await other.close()
        await database.close()
    }
}

/// Stops a replica's loop once its database has closed, and gives its two connections back (when the value goes).
private final class LoopStopper: Sendable {
    let loop: StoreTestLoop
    let database: PostgresDatabase

    init(_ loop: StoreTestLoop, after database: PostgresDatabase) {
        self.loop = loop
        self.database = database
    }

    deinit {
        let loop = loop
        let database = database
        Task.detached {
            await database.close()
            loop.stop()
            PostgresTestConnections.shared.release(2)
        }
    }
}
