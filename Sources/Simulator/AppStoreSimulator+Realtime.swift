import AppStoreDomain
import Foundation
import GatewayFoundation
import HTTPServer

extension AppStoreSimulator {
    /// The signed realtime request the App Store posts to a realtime URL (Apple's DecodedRealtimeRequestBody):
    /// a new `requestIdentifier` (returned beside the JWS), signed now.
    func signedRealtimeRequest(
        app: SimulatedApp, environment: AppleEnvironment, originalTransactionId: String, productId: String,
        userLocale: String
    ) throws(AppleRejection) -> (String, String) {
        let identifier = UUID().uuidString.lowercased()
        let payload = OrderedJSON.object([
            ("originalTransactionId", .string(originalTransactionId)), ("appAppleId", .integer(app.appAppleId)),
            ("productId", .string(productId)), ("userLocale", .string(userLocale)),
            ("requestIdentifier", .string(identifier)), ("environment", .string(environment.appleName)),
            ("signedDate", .integer(configuration.clock.wallNow().millisecondsSince1970)),
        ])
        let signer = SignedPayloads(pki: signingPKI(revoked: false), app: app, environment: environment)
        return (identifier, try signer.sign(payload))
    }

    /// Sends `count` signed realtime requests for `app` to `url`, `concurrency` at a time, each answer timed
    /// against `threshold` (what a performance test runs; Apple's sandbox test sends Sandbox requests).
    func sendRealtimeRequests(
        to url: URL, app: SimulatedApp, environment: AppleEnvironment = .sandbox, count: Int, concurrency: Int,
        threshold: Duration, originalTransactionId: String = "1000000000000001",
        productId: String = "com.example.monthly", userLocale: String = "en-US"
    ) async throws(AppleRejection) -> [RealtimeRequester.Attempt] {
        var requests: [(String, String)] = []
        for _ in 0..<max(0, count) {
            requests.append(
                try signedRealtimeRequest(
                    app: app, environment: environment, originalTransactionId: originalTransactionId,
                    productId: productId, userLocale: userLocale))
        }
        return await RealtimeRequester(threshold: threshold, concurrency: concurrency).send(requests, to: url)
    }

    /// `POST /simulator/realtime`: signed realtime requests sent to a realtime URL as the App Store sends them,
    /// for tests of a realtime URL (a performance test runs the same requests).
    ///
    /// Body (JSON, every member optional but `url`): `url`, `bundleId` (default: the first app), `environment`
    /// ("Sandbox", default, or "Production"), `count` (1…1000, default 1), `concurrency` (1…100, default 1),
    /// `responseTimeThreshold` (ms, default 500), `originalTransactionId`, `productId`, `userLocale`. Answers
    /// `{"results": [{"requestIdentifier", "status", "latencyMillis", "result", "body"}]}` in sending order
    /// (`status` 0: no answer; `body` the answer as text).
    func realtimeRequests(_ request: HTTPRequest) async -> HTTPResponse {
        guard request.body.count <= 64 * 1024,
            let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
        else { return SimulatorResponse.error(4_000_000, "The body must be a JSON object.") }
        guard let urlText = object["url"] as? String, let url = URL(string: urlText),
            url.scheme == "http" || url.scheme == "https"
        else { return SimulatorResponse.error(4_000_000, "url: an http(s) realtime URL is required.") }
        let bundleId = object["bundleId"] as? String ?? configuration.apps.first?.bundleId ?? ""
        guard let app = configuration.apps.first(where: { $0.bundleId == bundleId }) else {
            return SimulatorResponse.error(4_040_003, "App not found.")
        }
        let environment: AppleEnvironment = (object["environment"] as? String) == "Production" ? .production : .sandbox
        let count = min(1000, max(1, (object["count"] as? Int) ?? 1))
        let concurrency = min(100, max(1, (object["concurrency"] as? Int) ?? 1))
        let threshold = min(60_000, max(1, (object["responseTimeThreshold"] as? Int) ?? 500))
        let attempts: [RealtimeRequester.Attempt]
        do throws(AppleRejection) {
            attempts = try await sendRealtimeRequests(
                to: url, app: app, environment: environment, count: count, concurrency: concurrency,
                threshold: .milliseconds(threshold),
                originalTransactionId: object["originalTransactionId"] as? String ?? "1000000000000001",
                productId: object["productId"] as? String ?? "com.example.monthly",
                userLocale: object["userLocale"] as? String ?? "en-US")
        } catch {
            return SimulatorResponse.error(error)
        }
        let results: [OrderedJSON] = attempts.map { attempt in
            let millis =
                attempt.latency.components.seconds * 1000 + attempt.latency.components.attoseconds
                / 1_000_000_000_000_000
            return .object([
                ("requestIdentifier", .string(attempt.requestIdentifier)),
                ("status", .integer(Int64(attempt.status ?? 0))), ("latencyMillis", .integer(millis)),
                ("result", .string(attempt.result)), ("body", .string(String(decoding: attempt.body, as: UTF8.self))),
            ])
        }
        return SimulatorResponse.json(.object([("results", .array(results))]))
    }
}

extension AppStoreSimulator {
    /// Runs a Retention Messaging performance test as Apple does: `plan.totalRequests` signed realtime requests for
    /// the plan's app to its target, `maxConcurrentRequests` at a time, each timed against the plan's threshold.
    /// An unknown app or an unusable URL fails every request (NO_RESPONSE).
    func performanceTest(_ plan: PerformanceTestPlan) async -> [PerformanceTestAttempt] {
        let failed = {
            (0..<max(0, plan.totalRequests)).map { _ in PerformanceTestAttempt(result: "NO_RESPONSE", milliseconds: 0) }
        }
        guard let app = configuration.apps.first(where: { $0.bundleId == plan.bundleId }),
            let url = URL(string: plan.target), url.scheme == "http" || url.scheme == "https"
        else { return failed() }
        let environment: AppleEnvironment = plan.environment == "Production" ? .production : .sandbox
        let attempts: [RealtimeRequester.Attempt]
        do {
            attempts = try await sendRealtimeRequests(
                to: url, app: app, environment: environment, count: Int(clamping: min(plan.totalRequests, 10_000)),
                concurrency: Int(clamping: max(1, min(plan.maxConcurrentRequests, 100))),
                threshold: .milliseconds(plan.responseTimeThresholdMilliseconds),
                originalTransactionId: plan.originalTransactionId)
        } catch {
            return failed()
        }
        return attempts.map {
            PerformanceTestAttempt(
                result: $0.result,
                milliseconds: Int64(
                    clamping: $0.latency.components.seconds * 1000
                        + $0.latency.components.attoseconds / 1_000_000_000_000_000))
        }
    }
}
