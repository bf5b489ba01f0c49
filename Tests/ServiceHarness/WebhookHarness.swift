import Configuration
import Dispatch
import Edge
import Foundation
import GatewayApp
import GatewayFoundation
import HTTPServer
import NotificationStore
import Services
import Simulator
import Synchronization

/// The notification webhook driven from request bodies, as the webhook port hands them over: for the
/// `fuzz-webhook-handler` libFuzzer target and the tests replaying its corpus.
package final class WebhookHarness: Sendable {
    private let webhook: NotificationWebhook
    private let simulator: SimulatorServer
    /// Where the service's Apple calls go (the webhook's callers run on no loop), as in `GatewayApp`.
    private let upstreamLoop: GatewayComposition.OwnedLoop

    /// One per process, with its own simulator state and a fresh SQLite store.
    package static let shared: WebhookHarness = {
        do {
            return try WebhookHarness()
        } catch {
            preconditionFailure("the webhook harness cannot start: \(error)")
        }
    }()

    init() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webhook-harness-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let state = try SimulatorState.openOrCreate(directory: directory, seed: 12)
        simulator = try SimulatorServer(state: state, listen: ListenAddress(host: "127.0.0.1", port: 0))
        let path = try simulator.writeGatewayConfiguration()
        var configuration = try GatewayConfiguration.load(yaml: try String(contentsOfFile: path, encoding: .utf8))
        configuration.resolvePaths(relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        let store = try SQLiteNotificationStore(path: directory + "/notifications.db")
        let feed = LiveNotificationFeed(store: store, metrics: NotificationMetrics(registry: nil))
        let upstreamLoop = try GatewayComposition.OwnedLoop(threadName: "upstream-curl")
        self.upstreamLoop = upstreamLoop
        webhook = try GatewayComposition.service(configuration, upstreamLoop: upstreamLoop, live: feed)
            .webhook(path: "/apple/notifications", live: feed)
        upstreamLoop.start()
    }

    deinit {
        upstreamLoop.stop()
    }

    /// A body from a fuzz input: an input starting with `{` is the body itself; anything else is a JWS
    /// payload under a genuine Apple header with a zero signature, wrapped as Apple wraps it.
    package static func body(fromFuzzInput input: [UInt8]) -> [UInt8] {
        guard input.first != UInt8(ascii: "{") else { return input }
        let jws = ServiceHarness.genuineHeader + "." + Base64URL.encode(input) + "." + String(repeating: "A", count: 86)
        return Array("{\"signedPayload\":\"\(jws)\"}".utf8)
    }

    /// Posts a fuzz input and checks the answer is one the webhook's contract allows (200, 400, 403, 413,
    /// 503); returns the status.
    @discardableResult
    package func fuzz(_ input: [UInt8]) -> Int {
        ServiceHarness.blocking { await self.fuzz(input) }
    }

    /// `fuzz(_:)` for tests, awaited rather than blocking a thread.
    @discardableResult
    package func fuzz(_ input: [UInt8]) async -> Int {
        let request = HTTPRequest(
            method: "POST", target: "/apple/notifications", headers: [("content-type", "application/json")],
            body: Self.body(fromFuzzInput: input))
        let status = await webhook.handle(request).status
        precondition(
            [200, 400, 403, 413, 503].contains(status), "the webhook answered \(status) to a \(input.count)-byte input")
        return status
    }
}
