import AppStoreClient
import Redis
import XCTest

@testable import NotificationStore

/// The Redis store's reading of stream replies, without a Redis: ids, XRANGE items, refusals.
final class RedisEntryTests: XCTestCase {
    private func item(_ id: String, _ fields: [(String, String)]) -> RedisReply {
        .array([
            .string(Array(id.utf8)), .array(fields.flatMap { [.string(Array($0.0.utf8)), .string(Array($0.1.utf8))] }),
        ])
    }

    func testStreamIdsArePositionsInOrder() {
        XCTAssertEqual(
            RedisNotificationStore.position("1700000000000-3"), StorePosition(major: 1_700_000_000_000, minor: 3))
        XCTAssertLessThan(
            RedisNotificationStore.position("5-9")!, RedisNotificationStore.position("6-0")!)
        for bad in ["", "5", "5-", "-1", "a-b", "1-2-3", "99999999999999999999-0"] {
            XCTAssertNil(RedisNotificationStore.position(bad), bad)
        }
    }

    func testAnXRANGEItemBecomesAnEntry() throws {
        let entry = try XCTUnwrap(
            RedisNotificationStore.entry(
                item(
                    "7-1",
                    [
                        ("uuid", "u-1"), ("signedDate", "1700"), ("receivedAt", "1800"), ("bundleId", "com.example"),
                        ("environment", "Sandbox"), ("type", "DID_RENEW"), ("subtype", ""), ("payload", "a.b.c"),
                    ])))
        XCTAssertEqual(entry.position, StorePosition(major: 7, minor: 1))
        XCTAssertEqual(entry.receivedAt, 1800)
        XCTAssertEqual(
            entry.notification,
            NewNotification(
                uuid: "u-1", signedDate: 1700, bundleId: "com.example", environment: "Sandbox",
                notificationType: "DID_RENEW",
                subtype: "", signedPayload: "a.b.c"))
    }

    func testIncompleteOrMalformedItemsAreRefused() {
        XCTAssertNil(RedisNotificationStore.entry(item("7-1", [("uuid", "u")])))
        XCTAssertNil(RedisNotificationStore.entry(item("x", [])))
        XCTAssertNil(RedisNotificationStore.entry(.array([.string(Array("7-1".utf8)), .array([.string([0x61])])])))
        XCTAssertNil(RedisNotificationStore.entry(.integer(3)))
        XCTAssertNil(
            RedisNotificationStore.entry(
                item(
                    "7-1",
                    [
                        ("uuid", "u"), ("signedDate", "1.5"), ("receivedAt", "1"), ("bundleId", "b"),
                        ("environment", "Sandbox"),
                        ("type", "T"), ("payload", "p"),
                    ])))
    }
}
