import AppStoreDomain
import Foundation
import GatewayFoundation

/// Request a Test Notification and Get Test Notification Status (Apple's App Store Server API documentation): the request
/// returns a `testNotificationToken`; the status returns the TEST notification's `signedPayload` and
/// its send attempts, until the token expires (then 4040008).
final class TestNotificationEndpoints: Sendable {
    private struct Sent {
        var bundleId: String
        var environment: AppleEnvironment
        var notificationUUID: String
        var sentAt: Int64
        var result: String
    }

    private let sent = Lock<[String: Sent]>([:])
    private let random: Lock<DeterministicRandom>
    private let lifetime: Duration

    init(seed: UInt64, lifetime: Duration) {
        random = Lock(DeterministicRandom(seed: seed, stream: "test-notifications"))
        self.lifetime = lifetime
    }

    func request(app: SimulatedApp, environment: AppleEnvironment, now: WallTime) -> OrderedJSON {
        let (token, uuid, result) = random.withLock { random in
            (random.uuid(), random.uuid(), random.chance(0.9) ? "SUCCESS" : random.pick(SendAttemptSchedule.failures))
        }
        sent.withLock { sent in
            sent = sent.filter { now.millisecondsSince1970 - $0.value.sentAt <= lifetime.wholeMilliseconds }
            sent[token] = Sent(
                bundleId: app.bundleId, environment: environment, notificationUUID: uuid,
                sentAt: now.millisecondsSince1970, result: result)
        }
        return .object([("testNotificationToken", .string(token))])
    }

    func status(token: String, signer: SignedPayloads, now: WallTime) throws(AppleRejection) -> OrderedJSON {
        guard UUID(uuidString: token) != nil else {
            throw AppleRejection(4_000_020, "Invalid request. The test notification token is invalid.")
        }
        let entry = sent.withLock { $0[token] }
        guard let entry, entry.bundleId == signer.app.bundleId, entry.environment == signer.environment,
            now.millisecondsSince1970 - entry.sentAt <= lifetime.wholeMilliseconds
        else {
            throw AppleRejection(
                4_040_008,
                "Either the test notification token is expired or the notification and status are not yet available.")
        }
        return .object([
            ("signedPayload", .string(try signedPayload(entry, signer: signer))),
            ("sendAttempts", .array([SimulatedSendAttempt(attemptDate: entry.sentAt, result: entry.result).json])),
        ])
    }

    /// The TEST notification's `signedPayload` for `token` (nil for an unknown token), to deliver it.
    func signedPayload(token: String, signer: SignedPayloads) -> String? {
        guard let entry = sent.withLock({ $0[token] }) else { return nil }
        return try? signedPayload(entry, signer: signer)
    }

    private func signedPayload(_ entry: Sent, signer: SignedPayloads) throws(AppleRejection) -> String {
        let payload = OrderedJSON.object([
            ("notificationType", .string("TEST")), ("notificationUUID", .string(entry.notificationUUID)),
            (
                "data",
                .object([
                    ("appAppleId", .integer(signer.app.appAppleId)), ("bundleId", .string(signer.app.bundleId)),
                    ("environment", .string(signer.environment.appleName)),
                ])
            ),
            ("version", .string("2.0")), ("signedDate", .integer(entry.sentAt)),
        ])
        return try signer.sign(payload)
    }
}
