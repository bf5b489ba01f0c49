import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer

extension AppStoreSimulator {
    /// `POST /simulator/notifications`: new notifications, recorded in the app's history (Get Notification
    /// History shows them with their send attempts) and delivered to a webhook as Apple delivers them.
    ///
    /// Body (JSON, every member optional but `url` when no `webhookURL` is configured): `url`, `bundleId`
    /// (default: the first app), `environment` ("Sandbox", default, or "Production"), `notificationType`
    /// ("TEST"), `subtype`, `count` (1…500, default 1), `deliver` (false: recorded only, as if every attempt
    /// failed unseen), `retries` (default true: Apple's schedule divided by `timeFactor`, default
    /// `webhookTimeFactor`). Answers `{"notifications": [{"notificationUUID", "signedDate", "status"}]}`
    /// with each first attempt's HTTP status (0: no answer), in delivery order.
    ///
    /// `x-simulator-fault` on this request applies to the deliveries: `latency=…` delays each first try,
    /// `reset` makes each first try fail without reaching the server (retries then follow the schedule).
    func deliverNotifications(_ request: HTTPRequest) async -> HTTPResponse {
        let body = request.body
        var faults: [SimulatedFault] = []
        if configuration.allowsFaultHeader, let header = request.header(FaultHeader.name) {
            guard let parsed = FaultHeader.parse(header) else {
                return SimulatorResponse.badControlHeader(FaultHeader.name)
            }
            faults = parsed
        }
        guard body.count <= 64 * 1024,
            let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        else { return SimulatorResponse.error(4_000_000, "The body must be a JSON object.") }
        let urlText = object["url"] as? String ?? configuration.webhookURL
        guard let urlText, let url = URL(string: urlText), url.scheme == "http" || url.scheme == "https" else {
            return SimulatorResponse.error(4_000_000, "url: an http(s) webhook URL is required.")
        }
        let bundleId = object["bundleId"] as? String ?? configuration.apps.first?.bundleId ?? ""
        guard let app = configuration.apps.first(where: { $0.bundleId == bundleId }) else {
            return SimulatorResponse.error(4_040_003, "App not found.")
        }
        let environment: AppleEnvironment = (object["environment"] as? String) == "Production" ? .production : .sandbox
        let type = object["notificationType"] as? String ?? "TEST"
        let subtype = object["subtype"] as? String
        let count = min(500, max(1, (object["count"] as? Int) ?? 1))
        let deliver = object["deliver"] as? Bool ?? true
        let retries = object["retries"] as? Bool ?? true
        let factor =
            (object["timeFactor"] as? Double) ?? (object["timeFactor"] as? Int).map(Double.init)
            ?? configuration.webhookTimeFactor
        let delivery = WebhookDelivery(timeFactor: factor)
        let signer = SignedPayloads(
            pki: signingPKI(revoked: false), app: app, environment: environment, memo: signatures)
        let clock = configuration.clock
        var answers: [OrderedJSON] = []
        for _ in 0..<count {
            let now = clock.wallNow().millisecondsSince1970
            let notification = SimulatedNotification(
                notificationUUID: UUID().uuidString.lowercased(), notificationType: type, subtype: subtype, date: now,
                transactionId: nil, originalTransactionId: nil, sendAttempts: [])
            let jws: String
            do {
                jws = try signer.notification(notification, customer: nil)
            } catch {
                return SimulatorResponse.error(error)
            }
            recordNotification(notification, bundleId: bundleId, environment: environment)
            var status: Int?
            if deliver {
                for case .latency(let duration) in faults { await configuration.sleep(duration) }
                let uuid = notification.notificationUUID
                status = await delivery.deliver(
                    jws, to: url, retries: retries, failFirst: faults.contains(.resetConnection),
                    record: { [weak self] date, result in
                        self?.recordAttempt(
                            uuid: uuid, attempt: SimulatedSendAttempt(attemptDate: date, result: result),
                            bundleId: bundleId, environment: environment)
                    },
                    now: { clock.wallNow().millisecondsSince1970 })
            }
            answers.append(
                .object([
                    ("notificationUUID", .string(notification.notificationUUID)), ("signedDate", .integer(now)),
                    ("status", .integer(Int64(status ?? 0))), ("signedPayload", .string(jws)),
                ]))
        }
        return SimulatorResponse.json(.object([("notifications", .array(answers))]))
    }
}
