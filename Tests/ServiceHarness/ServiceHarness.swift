import AppStoreClient
import AppStoreDomain
import CallerAuthentication
import Configuration
import Dispatch
import Edge
import EventLoops
import Foundation
import GRPC
import GatewayApp
import GatewayFoundation
import HTTPServer
import NotificationStore
import Services
import SignedData
import Simulator

/// The gateway's RPCs driven through the server's own call path — the router, the call guard, deadlines,
/// `ServerCall` (deframing, the handler, framing, status trailers) — on an event loop of the harness's own, over
/// in-memory HTTP/2 streams instead of a socket; the built-in App Store simulator plays Apple on a loopback port
/// and the services are built as `GatewayApp` builds them. Used by the handler-level libFuzzer targets (fuzz/)
/// and by ServicesTests, which replay the same inputs.
package final class ServiceHarness: Sendable {
    /// The paths of the three RPCs with their own fuzz targets (`ServiceHarness+API.swift` has the rest).
    package static let getHistory = "/appstore.gateway.v1.AppStoreGateway/GetHistory"
    package static let streamNotifications = "/appstore.gateway.v1.AppStoreGateway/StreamNotifications"
    package static let verifyJWS = "/appstore.gateway.v1.AppStoreGateway/VerifyJWS"

    /// What one call produced, as a gRPC client reads it.
    package struct Outcome: Sendable {
        /// The final status (OK for a unary success), from the trailers.
        package var status: RPCStatus
        /// The response messages, in order, without their gRPC prefix.
        package var responses: [[UInt8]]
    }

    /// Most stream messages read before the harness stops reading and cancels the call (RST_STREAM CANCEL).
    package static let maxStreamMessages = 8

    /// The simulator playing Apple.
    package let simulator: SimulatorServer
    /// The server's responder (router, guard, calls) for one loop: `loop`.
    private let responder: any HTTP2Responder
    private let loop: EventLoop
    private let thread: LoopThread
    /// Where the services' Apple calls from no loop go, as in `GatewayApp`.
    private let upstreamLoop: GatewayComposition.OwnedLoop

    /// One harness per process: starting a simulator and loading the keys takes a moment.
    package static let shared: ServiceHarness = {
        do {
            return try ServiceHarness()
        } catch {
            preconditionFailure("the service harness cannot start: \(error)")
        }
    }()

    /// The gateway's service as built for the harness (its subscription state and what feeds it, for tests).
    package let service: AppStoreGatewayService

    /// A simulator in a fresh temporary state directory and the gateway's services configured for it, with
    /// rate-limit waits and retries off so every call ends quickly, behind the gateway's call guard for the
    /// configuration's `callers` (none: open, as the simulator's configuration has it). `keepsState` false builds
    /// a gateway without a webhook store (no subscription state); `subscriptions` wraps the state's store (a test's
    /// failing or slow one); the state counts in `stateMetrics`. `sharing` is another harness's simulator, to
    /// compare two gateways' answers to the same Apple.
    package init(
        sharing: SimulatorServer? = nil, keepsState: Bool = true,
        subscriptions: (@Sendable (any SubscriptionStore) -> any SubscriptionStore)? = nil,
        stateMetrics: SubscriptionStateMetrics = SubscriptionStateMetrics(registry: nil)
    ) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("service-harness-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        if let sharing {
            simulator = sharing
        } else {
            let state = try SimulatorState.openOrCreate(directory: directory, seed: 12)
            simulator = try SimulatorServer(state: state, listen: ListenAddress(host: "127.0.0.1", port: 0))
        }
        let path = try simulator.writeGatewayConfiguration()
        var configuration = try GatewayConfiguration.load(yaml: try String(contentsOfFile: path, encoding: .utf8))
        configuration.resolvePaths(relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        configuration.verification.trustBuiltInAppleRoot = true
        configuration.rateLimits.maxWait = .zero
        configuration.retries.maxAttempts = 1
        let upstreamLoop = try GatewayComposition.OwnedLoop(threadName: "upstream-curl")
        self.upstreamLoop = upstreamLoop
        // A webhook store beside it, so the SubscriptionState RPCs keep a state (its log stays empty).
        var feed: LiveNotificationFeed?
        if keepsState {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let store = try SQLiteNotificationStore(path: directory + "/notifications.db")
            let states = subscriptions.map { $0(store.subscriptions) } ?? store.subscriptions
            feed = LiveNotificationFeed(
                store: store, metrics: NotificationMetrics(registry: nil), states: states, stateMetrics: stateMetrics)
        }
        let service = try GatewayComposition.service(configuration, upstreamLoop: upstreamLoop, live: feed)
        self.service = service
        let served: [any GRPCService] = [
            HealthService(board: HealthStatusBoard(services: [AppStoreGatewayService.name])), service,
            service.retentionMessaging, service.advancedCommerce, service.subscriptionState,
        ]
        let callGuard = CallerGuard(
            authenticator: CallerAuthenticator(
                verifier: nil, policy: CallerPolicy(callers: configuration.callers, apps: configuration.apps)))
        responder = GRPCServer.responder(
            configuration: configuration.grpc, services: served + [ReflectionService(listing: served)],
            callGuard: callGuard)
        let loop = try EventLoop(index: 0)
        self.loop = loop
        thread = spawnThread(name: "harness-loop") { loop.run() }
        upstreamLoop.start()
    }

    deinit {
        loop.stop()
        thread.join()
        upstreamLoop.stop()
    }

    /// Runs `method` on the serialized `request` as a gRPC client calls it — a POST with `grpc-timeout: 2S`, the
    /// framed message, the end of the request — and reads the answer off the stream; a stream is cancelled after
    /// `maxStreamMessages` messages. Tests await this one: blocking a thread of Swift's cooperative pool (two on a
    /// 2-core machine) while the handler needs one can starve every task.
    package func call(_ method: String, request: [UInt8]) async -> Outcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            loop.execute { [responder, loop] in
                InMemoryGRPCStream.start(method, request: request, responder: responder, on: loop) { outcome in
                    continuation.resume(returning: outcome)
                }
            }
        }
    }

    /// `call` for a synchronous caller (the libFuzzer targets, on their own thread): waits at most 30 s; a
    /// call still running then is a hang, reported as a failure (a fuzz finding).
    package func call(_ method: String, request: [UInt8]) -> Outcome {
        Self.blocking { await self.call(method, request: request) }
    }

    /// Runs `body` as a task and blocks this thread until it ends (at most 30 s). Never from a task.
    static func blocking<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) -> Result {
        let result = Lock<Result?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome = await body()
            result.withLock { $0 = outcome }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success, let outcome = result.withLock({ $0 }) else {
            preconditionFailure("a call did not finish within 30 s of a 2 s deadline")
        }
        return outcome
    }
}
