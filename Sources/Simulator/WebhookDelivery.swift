import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Delivers notifications to a server's webhook as Apple does (App Store Server Notifications V2): a POST
/// of `{"signedPayload": "<JWS>"}` with `content-type: application/json`; anything but a 200 answered
/// within the timeout is a failed attempt, retried 1, 12, 24, 48 and 72 hours after the previous one
/// (those delays divided by `timeFactor`, so tests need not wait days). Every attempt is reported to
/// `record`, which the simulator turns into the notification's `sendAttempts` in its history.
struct WebhookDelivery: Sendable {
    /// Apple's delays are divided by it (3600: an hour becomes a second).
    var timeFactor: Double
    /// How long one attempt may take.
    var timeout: Duration = .seconds(5)

    /// Apple's retry delays after a failed attempt, in hours.
    static let retryDelaysHours: [Double] = [1, 12, 24, 48, 72]

    /// One POST; the HTTP status, or nil when there was no HTTP answer (refused, reset, timed out).
    func post(_ signedPayload: String, to url: URL) async -> Int? {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "content-type")
        request.httpBody = Data(OrderedJSON.object([("signedPayload", .string(signedPayload))]).encoded)
        request.timeoutInterval = Double(timeout.components.seconds) + 0.5
        do {
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode
        } catch {
            return nil
        }
    }

    /// The first attempt now; failed ones retried on Apple's schedule while `retries` allows (in a
    /// detached task, so the caller gets the first result at once). Returns the first attempt's status.
    /// `failFirst`: the first try fails without reaching the server (an injected `reset`).
    func deliver(
        _ signedPayload: String, to url: URL, retries: Bool, failFirst: Bool = false,
        record: @escaping @Sendable (_ attemptDate: Int64, _ result: String) -> Void,
        now: @escaping @Sendable () -> Int64
    ) async -> Int? {
        let first = failFirst ? nil : await post(signedPayload, to: url)
        record(now(), Self.result(first))
        guard first != 200, retries else { return first }
        let delivery = self
        Task.detached {
            for hours in Self.retryDelaysHours {
                let seconds = hours * 3600 / max(1, delivery.timeFactor)
                try? await Task.sleep(for: .milliseconds(Int64(min(seconds, 86_400 * 30) * 1000)))
                if Task.isCancelled { return }
                let status = await delivery.post(signedPayload, to: url)
                record(now(), Self.result(status))
                if status == 200 { return }
            }
        }
        return first
    }

    /// Apple's sendAttemptResult for an attempt's outcome.
    static func result(_ status: Int?) -> String {
        switch status {
        case 200?: "SUCCESS"
        case nil: "NO_RESPONSE"
        default: "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        }
    }
}
