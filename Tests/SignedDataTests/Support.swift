import Cryptography
import Foundation
import Testing

@testable import SignedData

/// Fixture files, found from this source file (no SwiftPM resources).
enum Fixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures")
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func jws(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: directory.appendingPathComponent(name + ".jws")), as: UTF8.self)
    }

    static var genuineNames: [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".jws") }.map { String($0.dropLast(4)) }.sorted()
    }

    static func appleRoot() throws -> Certificate {
        try Certificate(
            derEncoded: Array(Data(contentsOf: repository.appendingPathComponent("certs/AppleRootCA-G3.cer"))))
    }
}

/// A clock tests set by hand.
final class ManualClock: VerificationClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ start: Date) { current = start }
    func now() -> Date { lock.withLock { current } }
    func advance(by interval: TimeInterval) { lock.withLock { current += interval } }
}

/// The reference time of the generated PKI: 2025-01-01T00:00:00Z.
let referenceTime = Date(timeIntervalSince1970: 1_735_689_600)
let referenceMilliseconds: Int64 = 1_735_689_600_000
let day: TimeInterval = 86_400

func json(_ object: [String: Any]) -> Data {
    (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
}

func transactionPayload(
    signedDate: Int64 = referenceMilliseconds, bundleID: String = "com.example.app", environment: String = "Sandbox"
) -> Data {
    json([
        "transactionId": "1000", "originalTransactionId": "1000", "bundleId": bundleID, "productId": "pro.monthly",
        "purchaseDate": signedDate - 1000, "signedDate": signedDate, "environment": environment,
        "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
    ])
}
