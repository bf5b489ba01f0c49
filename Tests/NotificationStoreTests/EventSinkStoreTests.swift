import NotificationStore
import Testing

/// Which sink store a test runs against: the SQLite one (reopened from its file, as after a restart) and the
/// memory one the layers above test with, with the same semantics.
enum SinkStoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case memory

    var testDescription: String { rawValue }

    /// A fresh store, its file (nil in memory) and how to get the store "after a restart" (the memory store is
    /// the same object: it lives as long as the process).
    func make() throws -> (any EventSinkStore, StoreFile?, @Sendable () throws -> any EventSinkStore) {
        switch self {
        case .memory:
            let store = MemoryEventSinkStore()
            return (store, nil, { store })
        case .sqlite:
            let file = try StoreFile()
            let path = file.path
            return (
                try SQLiteNotificationStore(path: path).sinks, file, { try SQLiteNotificationStore(path: path).sinks }
            )
        }
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

    @Test(arguments: SinkStoreKind.allCases)
    func aNewSinkStartsAfterTheLogsNewestPositionAndKeepsThatStart(_ kind: SinkStoreKind) async throws {
        let (store, file, _) = try kind.make()
        defer { withExtendedLifetime(file) {} }
        let first = try await store.openSink(Self.team, startingAfter: 41, nowMillis: 1)
        #expect(first == EventSinkProgress(through: 41))
        // Opened again later, when the log has grown: the first start holds.
        let again = try await store.openSink(Self.team, startingAfter: 90, nowMillis: 2)
        #expect(again == EventSinkProgress(through: 41))
        // Another kind of sink at the same URL is another sink.
        #expect(try await store.openSink(Self.relay, startingAfter: 7, nowMillis: 3) == EventSinkProgress(through: 7))
    }

    @Test(arguments: SinkStoreKind.allCases)
    func settledPositionsAboveTheWatermarkSurviveARestartAndAreDroppedBelowIt(_ kind: SinkStoreKind) async throws {
        let (store, file, reopen) = try kind.make()
        defer { withExtendedLifetime(file) {} }
        _ = try await store.openSink(Self.team, startingAfter: 10, nowMillis: 1)
        // 11 is still in flight; 12, 14 and 15 were acknowledged out of order.
        try await store.record(Self.team, EventSinkUpdate(through: 10, settled: [12, 14, 15]))
        let restarted = try reopen()
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
    }

    @Test(arguments: SinkStoreKind.allCases)
    func deadLettersKeepTheirBodiesAndAreListedCountedAndRemoved(_ kind: SinkStoreKind) async throws {
        let (store, file, reopen) = try kind.make()
        defer { withExtendedLifetime(file) {} }
        _ = try await store.openSink(Self.team, startingAfter: 0, nowMillis: 1)
        _ = try await store.openSink(Self.relay, startingAfter: 0, nowMillis: 1)
        let body = "{\"eventId\":\"é\",\"n\":\"\u{0}\"}"
        try await store.record(
            Self.team,
            EventSinkUpdate(
                through: 3, settled: [1, 2, 3],
                deadLetters: [Self.letter(2, deadAt: 4_000, body: body), Self.letter(3, deadAt: 6_000)]))
        try await store.record(Self.relay, EventSinkUpdate(through: 1, deadLetters: [Self.letter(1)]))
        let restarted = try reopen()
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
    }

    @Test(arguments: SinkStoreKind.allCases)
    func recordingForASinkNeverOpenedFails(_ kind: SinkStoreKind) async throws {
        let (store, file, _) = try kind.make()
        defer { withExtendedLifetime(file) {} }
        await #expect(throws: NotificationStoreFailure.self) {
            try await store.record(Self.team, EventSinkUpdate(through: 1))
        }
    }
}
