import NotificationStore
import TestSupport
import Testing

/// Which sink store a test runs against: the SQLite one (reopened from its file, as after a restart), the memory
/// one the layers above test with, and the PostgreSQL one (a database of its own; "after a restart" is another
/// replica's `PostgresDatabase` on it), with the same semantics.
enum SinkStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case memory
    case postgres

    var testDescription: String { rawValue }

    /// The kinds this machine can run (PostgreSQL only where it is installed).
    static var available: [SinkStoreKind] { allCases.filter { $0 != .postgres || PostgresProcess.available } }

    /// A fresh store, and how to get the store "after a restart" (the memory store is the same object: it lives as
    /// long as the process).
    func make() async throws -> SinkStoreFixture {
        switch self {
        case .memory:
            let store = MemoryEventSinkStore()
            return SinkStoreFixture(store: store, file: nil, databases: nil) { store }
        case .sqlite:
            let file = try StoreFile()
            let path = file.path
            return SinkStoreFixture(store: try SQLiteNotificationStore(path: path).sinks, file: file, databases: nil) {
                try SQLiteNotificationStore(path: path).sinks
            }
        case .postgres:
            let databases = try await TestDatabases()
            let store = PostgresEventSinkStore(try await databases.open())
            return SinkStoreFixture(store: store, file: nil, databases: databases) {
                PostgresEventSinkStore(try await databases.open())
            }
        }
    }
}

/// A store under test and what it needs kept (its file, its databases); `close()` at the end of the test.
struct SinkStoreFixture: Sendable {
    let store: any EventSinkStore
    let file: StoreFile?
    let databases: TestDatabases?
    let reopen: @Sendable () async throws -> any EventSinkStore

    init(
        store: any EventSinkStore, file: StoreFile?, databases: TestDatabases?,
        reopen: @escaping @Sendable () async throws -> any EventSinkStore
    ) {
        self.store = store
        self.file = file
        self.databases = databases
        self.reopen = reopen
    }

    func close() async {
        await databases?.close()
        withExtendedLifetime(file) {}
    }
}

@Suite struct EventSinkStoreTests {
    static let team = EventSinkID(kind: .subscriptionEvents, url: "https://team.example/hooks")
    static let relay = EventSinkID(kind: .notifications, url: "https://team.example/hooks")

    static func letter(_ position: Int64, deadAt: Int64 = 5_000, body: String = "{}") -> EventDeadLetter {
        EventDeadLetter(
            position: position, eventId: "event-\(position)", attempts: 7, firstAttemptAt: 1_000, deadAt: deadAt,
            lastError: "HTTP 500", body: Array(body.utf8))
    }

    @Test(arguments: SinkStoreKind.available)
    func aNewSinkStartsAfterTheLogsNewestPositionAndKeepsThatStart(_ kind: SinkStoreKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        let first = try await store.openSink(Self.team, startingAfter: 41, nowMillis: 1)
        #expect(first == EventSinkProgress(through: 41))
        // Opened again later, when the log has grown: the first start holds.
        let again = try await store.openSink(Self.team, startingAfter: 90, nowMillis: 2)
        #expect(again == EventSinkProgress(through: 41))
        // Another kind of sink at the same URL is another sink.
        #expect(try await store.openSink(Self.relay, startingAfter: 7, nowMillis: 3) == EventSinkProgress(through: 7))
        await fixture.close()
    }

    @Test(arguments: SinkStoreKind.available)
    func settledPositionsAboveTheWatermarkSurviveARestartAndAreDroppedBelowIt(_ kind: SinkStoreKind) async throws {
        let fixture = try await kind.make()
        let (store, reopen) = (fixture.store, fixture.reopen)
        _ = try await store.openSink(Self.team, startingAfter: 10, nowMillis: 1)
        // 11 is still in flight; 12, 14 and 15 were acknowledged out of order.
        try await store.record(Self.team, EventSinkUpdate(through: 10, settled: [12, 14, 15]))
        let restarted = try await reopen()
        #expect(
            try await restarted.openSink(Self.team, startingAfter: 99, nowMillis: 2)
                == EventSinkProgress(through: 10, settled: [12, 14, 15]))
        // 11 and 13 settle: the watermark moves to 15 and nothing stays above it.
        try await restarted.record(Self.team, EventSinkUpdate(through: 15, settled: [11, 13]))
        #expect(
            try await reopen().openSink(Self.team, startingAfter: 99, nowMillis: 3) == EventSinkProgress(through: 15))
        // A watermark never moves back.
        try await restarted.record(Self.team, EventSinkUpdate(through: 12, settled: [17]))
        #expect(
            try await reopen().openSink(Self.team, startingAfter: 99, nowMillis: 4)
                == EventSinkProgress(through: 15, settled: [17]))
        await fixture.close()
    }

    @Test(arguments: SinkStoreKind.available)
    func deadLettersKeepTheirBodiesAndAreListedCountedAndRemoved(_ kind: SinkStoreKind) async throws {
        let fixture = try await kind.make()
        let (store, reopen) = (fixture.store, fixture.reopen)
        _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 1)
        _ = try await store.openSink(Self.relay, startingAfter: 0, nowMillis: 1)
        let body = "{\"eventId\":\"é\",\"n\":\"\u{0}\"}"
        try await store.record(
            Self.team,
            EventSinkUpdate(
                through: 3, settled: [1, 2, 3],
                deadLetters: [Self.letter(2, deadAt: 4_000, body: body), Self.letter(3, deadAt: 6_000)]))
        try await store.record(Self.relay, EventSinkUpdate(through: 1, deadLetters: [Self.letter(1)]))
        let restarted = try await reopen()
        #expect(try await restarted.deadLetterCount(Self.team) == 2)
        #expect(try await restarted.deadLetterCount(Self.relay) == 1)
        let all = try await restarted.deadLetters(Self.team, deadSince: 0, after: 0, limit: 10)
        #expect(all == [Self.letter(2, deadAt: 4_000, body: body), Self.letter(3, deadAt: 6_000)])
        #expect(all.first?.body == Array(body.utf8))
        #expect(
            try await restarted.deadLetters(Self.team, deadSince: 5_000, after: 0, limit: 10).map(\.position) == [3])
        #expect(try await restarted.deadLetters(Self.team, deadSince: 0, after: 2, limit: 10).map(\.position) == [3])
        #expect(try await restarted.deadLetters(Self.team, deadSince: 0, after: 0, limit: 1).map(\.position) == [2])
        #expect(try await restarted.removeDeadLetter(Self.team, position: 2))
        #expect(!(try await restarted.removeDeadLetter(Self.team, position: 2)))
        #expect(try await restarted.deadLetterCount(Self.team) == 1)
        #expect(try await restarted.deadLetterCount(Self.relay) == 1)
        await fixture.close()
    }

    @Test(arguments: SinkStoreKind.available)
    func recordingForASinkNeverOpenedFails(_ kind: SinkStoreKind) async throws {
        let fixture = try await kind.make()
        let store = fixture.store
        await #expect(throws: NotificationStoreFailure.self) {
            try await store.record(Self.team, EventSinkUpdate(through: 1))
        }
        await fixture.close()
    }
}
