import Foundation
import NotificationStore
import XCTest

final class SQLiteNotificationStoreTests: XCTestCase {
    private var directory = ""

    override func setUp() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    private func notification(
        _ uuid: String, signedDate: Int64, bundle: String = "com.example", type: String = "DID_RENEW"
    )
        -> NewNotification
    {
        NewNotification(
            uuid: uuid, signedDate: signedDate, bundleId: bundle, environment: "Sandbox", notificationType: type,
            subtype: "", signedPayload: "jws-\(uuid)")
    }

    /// Inserts that arrive together are committed in groups: every one is answered after its commit, each new UUID
    /// stored once at a position of its own, each repeated one (also within one group) a duplicate of that row.
    func testConcurrentInsertsAreCommittedInGroupsEachOnce() async throws {
        let path = directory + "/group.db"
        let store = try SQLiteNotificationStore(path: path)
        let outcomes = try await withThrowingTaskGroup(of: (String, InsertOutcome).self) { group in
            for index in 0..<300 {
                let uuid = "u-\(index % 200)"  // 100 UUIDs twice
                let new = NewNotification(
                    uuid: uuid, signedDate: Int64(index), bundleId: "com.example", environment: "Sandbox",
                    notificationType: "DID_RENEW", subtype: "", signedPayload: "jws-\(uuid)")
                group.addTask { (uuid, try await store.insert(new, receivedAt: 1)) }
            }
            return try await group.reduce(into: [(String, InsertOutcome)]()) { $0.append($1) }
        }
        var stored: [String: StorePosition] = [:]
        var duplicates: [(String, StorePosition)] = []
        for (uuid, outcome) in outcomes {
            switch outcome {
            case .stored(let at):
                XCTAssertNil(stored[uuid], "\(uuid) stored twice")
                stored[uuid] = at
            case .duplicate(let at): duplicates.append((uuid, at))
            }
        }
        XCTAssertEqual(stored.count, 200)
        XCTAssertEqual(Set(stored.values).count, 200)
        XCTAssertEqual(duplicates.count, 100)
        for (uuid, at) in duplicates { XCTAssertEqual(stored[uuid], at) }
        // What was answered is on disk: a second connection sees every row.
        let reopened = try SQLiteNotificationStore(path: path)
        let page = try await reopened.entries(after: .zero, limit: 1000)
        XCTAssertEqual(page.entries.count, 200)
    }

    func testInsertIsIdempotentByUUIDAndSurvivesReopening() async throws {
        let path = directory + "/n.db"
        do {
            let store = try SQLiteNotificationStore(path: path)
            guard case .stored(let first) = try await store.insert(notification("a", signedDate: 10), receivedAt: 100)
            else {
                return XCTFail("first insert must store")
            }
            guard
                case .duplicate(let again) = try await store.insert(notification("a", signedDate: 10), receivedAt: 200)
            else { return XCTFail("second insert must be a duplicate") }
            XCTAssertEqual(first, again)
            XCTAssertTrue(
                FileManager.default.fileExists(atPath: path + "-wal"), "WAL mode keeps a -wal file while open")
        }
        let reopened = try SQLiteNotificationStore(path: path)
        let page = try await reopened.entries(after: .zero, matching: StoreFilter(bundleId: "com.example"), limit: 10)
        XCTAssertEqual(page.entries.map(\.notification.uuid), ["a"])
        XCTAssertEqual(page.entries.first?.receivedAt, 100)
        XCTAssertEqual(page.entries.first?.notification.signedPayload, "jws-a")
    }

    func testEntriesAfterFollowPositionsAndFilters() async throws {
        let store = try SQLiteNotificationStore(path: directory + "/n.db")
        _ = try await store.insert(notification("a", signedDate: 30), receivedAt: 1)
        _ = try await store.insert(notification("b", signedDate: 10, bundle: "com.other"), receivedAt: 2)
        _ = try await store.insert(notification("c", signedDate: 20, type: "REFUND"), receivedAt: 3)
        let all = try await store.entries(after: .zero, matching: StoreFilter(bundleId: "com.example"), limit: 10)
        XCTAssertEqual(all.entries.map(\.notification.uuid), ["a", "c"])
        let refunds = try await store.entries(
            after: .zero, matching: StoreFilter(bundleId: "com.example", notificationType: "REFUND"), limit: 10)
        XCTAssertEqual(refunds.entries.map(\.notification.uuid), ["c"])
        let later = try await store.entries(
            after: all.entries[0].position, matching: StoreFilter(bundleId: "com.example"), limit: 10)
        XCTAssertEqual(later.entries.map(\.notification.uuid), ["c"])
        let last = try await store.lastPosition()
        XCTAssertEqual(last, all.entries[1].position)
    }

    func testWindowOrdersBySignedDateAndContinuesAfterAKey() async throws {
        let store = try SQLiteNotificationStore(path: directory + "/n.db")
        for (uuid, date) in [("a", 30), ("b", 10), ("c", 20), ("d", 20), ("e", 99)] {
            _ = try await store.insert(notification(uuid, signedDate: Int64(date)), receivedAt: 1)
        }
        let through = try await store.lastPosition()
        let filter = StoreFilter(bundleId: "com.example", start: 10, end: 50)
        let first = try await store.window(matching: filter, through: through, after: nil, limit: 2)
        XCTAssertEqual(first.map(\.notification.uuid), ["b", "c"])
        let rest = try await store.window(matching: filter, through: through, after: first.last?.key, limit: 10)
        XCTAssertEqual(rest.map(\.notification.uuid), ["d", "a"])
        let snapshot = try await store.window(matching: filter, through: first[0].position, after: nil, limit: 10)
        XCTAssertEqual(
            snapshot.map(\.notification.uuid), ["b", "a"], "entries stored after the snapshot are live ones")
    }

    func testPruneDropsOldEntriesButNeverReusesPositions() async throws {
        let store = try SQLiteNotificationStore(path: directory + "/n.db")
        _ = try await store.insert(notification("old", signedDate: 1), receivedAt: 1_000)
        _ = try await store.insert(notification("new", signedDate: 2), receivedAt: 5_000)
        let removed = try await store.prune(receivedBefore: 2_000)
        XCTAssertEqual(removed, 1)
        let before = try await store.lastPosition()
        guard case .stored(let next) = try await store.insert(notification("newer", signedDate: 3), receivedAt: 6_000)
        else {
            return XCTFail("must store")
        }
        XCTAssertGreaterThan(next, before)
        let found = try await store.positions(ofUUIDs: ["old", "new", "newer"])
        XCTAssertNil(found["old"])
        XCTAssertNotNil(found["new"])
        XCTAssertEqual(found["newer"], next)
    }

    func testAnUnopenableFileIsAFailureNotACrash() {
        XCTAssertThrowsError(try SQLiteNotificationStore(path: directory + "/missing-dir/n.db"))
    }

    func testLiveSignalWakesAWaiterAndTimesOut() async {
        let signal = LiveSignal()
        let seen = signal.generation
        let started = ContinuousClock.now
        await signal.wait(past: seen, timeout: .milliseconds(20))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(15))
        let waiter = Task { await signal.wait(past: seen, timeout: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(10))
        signal.raise()
        await waiter.value
        XCTAssertNotEqual(signal.generation, seen)
        await signal.wait(past: seen, timeout: .seconds(60))  // already past: returns at once
    }
}
