import Foundation
import NotificationStore
import Testing

/// The SQLite store's batched UUID lookup, past one query's worth of UUIDs.
@Suite struct SQLiteLookupTests {
    @Test func positionsOfManyUUIDsAreFoundAcrossBatchesAndMissingOnesLeftOut() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteNotificationStore(path: directory.path + "/n.db")
        var stored: [String: StorePosition] = [:]
        let count = NotificationStoreLimits.lookupBatch * 2 + 7
        for index in 0..<count {
            let outcome = try await store.insert(
                NewNotification(
                    uuid: "u-\(index)", signedDate: Int64(index), bundleId: "com.example", environment: "Sandbox",
                    notificationType: "TEST", subtype: "", signedPayload: "p"),
                receivedAt: 1)
            if case .stored(let position) = outcome { stored["u-\(index)"] = position }
        }
        let asked = ["absent"] + (0..<count).map { "u-\($0)" } + ["also-absent"]
        #expect(try await store.positions(ofUUIDs: asked) == stored)
        #expect(try await store.positions(ofUUIDs: []).isEmpty)
    }
}
