import AppStoreClient
import AppStoreDomain
import Configuration
import EventLoops
import Foundation
import GatewayFoundation
import NotificationStore
import Redis
import Services
import SignedData

/// How the gateway's service is built, for `GatewayApp` and the tests' harnesses alike: reads the files the
/// configuration names (trusted roots, the apps' private keys, the resume-token key ring), makes the upstream
/// HTTP client on the given upstream `OwnedLoop` and builds the verifier (with its online checks when configured), the
/// Apple client and the gateway's service from them. A bad file fails with a `ConfigurationError` naming its key.
package enum GatewayComposition {
    /// An event loop on a joinable thread of its own, for work that belongs to no caller's loop: the upstream HTTP
    /// client's calls from no event loop (the notification reconciler, OCSP checks; thread `upstream-curl`), and
    /// the PostgreSQL store's connections (`store-pg`). The loop runs from `start()` until `stop()`, which its
    /// owner calls once nothing uses it any more (`GatewayApp`: the upstream loop after the gRPC port and the
    /// webhook have stopped, the store's last); work handed to it after that fails. Going away stops it.
    package final class OwnedLoop: Sendable {
        private enum State {
            case idle
            case running(LoopThread)
            case stopped
        }

        let loop: EventLoop
        private let threadName: String
        private let state = Lock(State.idle)

        /// The loop, not yet running; its thread will be named `threadName`.
        package init(threadName: String) throws(GatewayStartError) {
            self.threadName = threadName
            do {
                loop = try EventLoop(index: 0)
            } catch {
                throw GatewayStartError("cannot make the \(threadName) event loop: \(error)")
            }
        }

        deinit { stop() }

        /// Starts the loop's thread. Once only: after `stop()` it does nothing.
        package func start() {
            state.withLock { state in
                guard case .idle = state else { return }
                let loop = loop
                state = .running(spawnThread(name: threadName) { loop.run() })
            }
        }

        /// Stops the loop and waits for its thread; a loop never started runs once, so that it lets go of what
        /// it holds and refuses later calls. Idempotent.
        package func stop() {
            start()
            let thread: LoopThread? = state.withLock { state in
                guard case .running(let thread) = state else { return nil }
                state = .stopped
                return thread
            }
            guard let thread else { return }
            loop.stop()
            thread.join()
        }
    }

    /// The gateway's service for `configuration`, its calls to Apple from no event loop served on
    /// `upstreamLoop`, its Apple client counting in `clientMetrics` and its handlers in `serviceMetrics`
    /// (registries of their own, read by nobody, by default), feeding `live` (the webhook's notifications) to its
    /// streams.
    package static func service(
        _ configuration: GatewayConfiguration, upstreamLoop: OwnedLoop,
        clientMetrics: AppStoreClientMetrics = AppStoreClientMetrics(),
        serviceMetrics: ServiceMetrics = ServiceMetrics(), live: LiveNotificationFeed? = nil,
        tracer: any Tracer = SilentTracer()
    ) throws(ConfigurationError) -> AppStoreGatewayService {
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        let signers = try AppKeySigner.loadAll(configuration)
        // No ring file: a random key, good for this process only (`GatewayApp` logs a warning).
        let resumeTokenKeys =
            try ResumeTokenKeyRing.keys(configuration).map { ResumeTokenKeyRing(keys: $0) } ?? .random()
        let http = try UpstreamHTTPClient(configuration.apple, loop: upstreamLoop.loop)
        let online = configuration.verification.onlineChecks
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(
                configuration: .init(configuration.verification, trustedRoots: roots),
                ocspTransport: online.enabled
                    ? UpstreamOCSPTransport(http: http, timeout: online.timeout) : nil
            )
        } catch {
            throw ConfigurationError(key: "verification", problem: "\(error)")
        }
        if let problem = RedisTLSContext.problem(
            configuration.redis, allowReadableKeyFiles: configuration.apple.allowReadableKeyFiles)
        {
            throw problem
        }
        let client = try AppStoreAPIClient(
            configuration: configuration, http: http, signers: signers, metrics: clientMetrics, tracer: tracer)
        return AppStoreGatewayService(
            configuration: configuration, verifier: verifier, client: client, resumeTokenKeys: resumeTokenKeys,
            live: live, metrics: serviceMetrics)
    }
}
