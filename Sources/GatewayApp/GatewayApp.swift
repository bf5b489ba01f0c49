import AppStoreClient
import AppStoreDomain
import CallerAuthentication
import Configuration
import Edge
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import Logging
import Metrics
import Observability
import ProtoCodec
import Redis
import Services
import SignedData
import Tracing

/// The gateway, composed from its configuration: the gRPC server with the health, gateway, retention messaging
/// and reflection services, the caller checks and the watcher of their files, the notification store and webhook
/// port, and the admin endpoint. `init` builds what needs no socket (a bad file or key stops it there); `start`
/// binds and starts the ports; `stop` drains and stops them. The `serve` command and the tests start the gateway here.
package final class GatewayApp {
    /// What it was built from.
    package let configuration: GatewayConfiguration
    /// The gateway's service (its verifier, rate limiter and handlers).
    package let service: AppStoreGatewayService
    /// Health statuses: the gateway's service is SERVING from `start` until `stop` begins.
    package let board: HealthStatusBoard
    /// The metrics every part reports to (the admin endpoint's `/metrics`).
    package let registry: MetricsRegistry
    /// The gRPC server's call metrics (go-grpc-prometheus names).
    private let rpcMetrics: RPCMetrics
    /// One line per call (`logging.accessLog`; nil when off).
    private let accessLog: JSONAccessLog?
    /// OpenTelemetry spans (README "Tracing"): nil, and nothing recorded, without an OTLP endpoint.
    private let tracer: OTLPTracer?
    private let feed: LiveNotificationFeed?
    /// The store behind `feed` (nil without a webhook): closed last, after everything that uses it stopped.
    private let backend: StoreBackend?
    private let access: CallerAccessSetup
    /// `callers` re-read from the configuration file (nil without a file).
    private let callersReload: CallersReload?
    /// The admin port's bearer token (`admin.bearerTokenFile`); nil = the admin port asks for none.
    private let adminToken: AdminBearerToken?
    private let logger: Logger
    /// Where the Apple client serves callers on no event loop: running from `start` until everything else stopped.
    private let upstreamLoop: GatewayComposition.OwnedLoop
    private var grpc: GRPCServer?
    private var webhook: WebhookRuntime?
    /// The team webhooks and the relay (nil when none is configured).
    private let sinks: EventSinkRuntime?
    private var admin: HTTP2Server?
    private var stops = StopActions()

    /// Builds the service, the notification store and the caller checks from `configuration`, reading every
    /// file it names; binds nothing. With `configurationFile` (what `configuration` was read from), its `callers`
    /// are re-read when the file changes (README "Permissions").
    package init(
        _ configuration: GatewayConfiguration, configurationFile: String? = nil,
        logger: Logger = Logger(label: "appstore-gateway")
    ) throws(GatewayStartError) {
        self.configuration = configuration
        self.logger = logger
        // Each layer registers its own families; they are made here in the order `/metrics` has always listed them.
        let registry = MetricsRegistry()
        self.registry = registry
        rpcMetrics = RPCMetrics(registry: registry)
        let calls = AppleCallMetrics(registry: registry)
        let verifications = VerificationMetrics(
            registry: registry, verdicts: VerificationVerdict.allCases.map(\.rawValue))
        let rateLimits = RateLimitMetrics(registry: registry)
        let coalescing = CoalescingMetrics(registry: registry)
        tracer = OTLPTracer.make(configuration.tracing, metrics: TracingMetrics(registry: registry))
        let accessMetrics = CallerAccessMetrics(
            registry: registry, listedCallers: configuration.callers?.map(\.identity) ?? [])
        let fairShares = FairShareMetrics(registry: registry)
        accessLog =
            configuration.logging.accessLog
            ? JSONAccessLog(
                logger: Logger(label: "appstore-gateway.rpc"),
                writer: configuration.logging.format == "json" ? .standardError : nil) : nil
        board = HealthStatusBoard(
            services: [AppStoreGatewayService.name, RetentionMessagingService.name], initial: .serving)
        let opened = try WebhookRuntime.feed(configuration, registry: registry)
        // The Redis store keeps no state: entitlements asked for there would silently answer nothing.
        if let opened, opened.feed.states == nil,
            let index = configuration.apps.firstIndex(where: { !$0.entitlements.isEmpty })
        {
            opened.backend.close()
            throw .invalidConfiguration(
                ConfigurationError(
                    key: "apps[\(index)].entitlements",
                    problem: "needs the subscription state, which the Redis notification store does not keep: use "
                        + "notifications.store.postgres (several replicas) or the SQLite store (one)"))
        }
        feed = opened?.feed
        backend = opened?.backend
        upstreamLoop = try GatewayComposition.OwnedLoop(threadName: "upstream-curl")
        do {
            service = try GatewayComposition.service(
                configuration, upstreamLoop: upstreamLoop,
                clientMetrics: AppStoreClientMetrics(
                    calls: calls, rateLimits: rateLimits, fairShares: fairShares,
                    sharedBudget: SharedBudgetMetrics(registry: registry)),
                serviceMetrics: ServiceMetrics(verifications: verifications, coalescing: coalescing), live: feed,
                tracer: tracer ?? SilentTracer())
        } catch {
            throw .invalidConfiguration(error)
        }
        do throws(ConfigurationError) {
            adminToken = try AdminBearerToken.token(configuration).map(AdminBearerToken.init(token:))
        } catch {
            throw .invalidConfiguration(error)
        }
        sinks = try EventSinkRuntime.make(
            configuration, feed: feed, fleet: backend?.fleet ?? .soleReplica, upstreamLoop: upstreamLoop,
            registry: registry,
            tracer: tracer ?? SilentTracer(), logger: logger)
        let authenticator = try CallerAccessSetup.authenticator(configuration)
        let callersReload = configurationFile.map {
            CallersReload(path: $0, apps: configuration.apps, authenticator: authenticator, logger: logger)
        }
        self.callersReload = callersReload
        access = try CallerAccessSetup(
            configuration: configuration, authenticator: authenticator, metrics: accessMetrics, logger: logger,
            registry: registry,
            others: Self.resumeTokenKeyRing(configuration, service: service, logger: logger)
                + Self.adminTokenFile(configuration, token: adminToken, logger: logger)
                + (callersReload.map { [$0.watched] } ?? []))
    }

    /// `appstore-gateway state rebuild`: the subscription state deleted and projected again from the webhook's
    /// log (no port is opened). Throws `.stateNotKept` on a gateway that keeps no state.
    package func rebuildSubscriptionState() async throws(GatewayError) -> Int {
        guard let projector = service.subscriptionProjector else { throw Self.stateNotKept }
        return try await projector.rebuild()
    }

    /// `appstore-gateway state export`: the subscription state's rows at this instant, read from the store one page
    /// at a time (no port is opened, Apple is not called): of every app or only `app` (a configured name or bundle
    /// id), of every environment or only `environment`. Throws `.stateNotKept` on a gateway that keeps no state (as
    /// `rebuildSubscriptionState` does), `.unknownApp` for an app not configured.
    package func subscriptionStateExport(app: String?, environment: AppleEnvironment?) throws(GatewayError)
        -> SubscriptionStateExport
    {
        guard service.subscriptionProjector != nil else { throw Self.stateNotKept }
        return try service.subscriptionState.export(app: app, environment: environment)
    }

    /// Why `state rebuild` and `state export` refuse a configuration that keeps no state.
    static let stateNotKept = GatewayError.stateNotKept(
        "it needs notifications.webhook and the SQLite or PostgreSQL notification store")

    /// The gRPC port bound (nil unless started).
    package var grpcPort: UInt16? { grpc?.port }
    /// The admin port bound (nil unless started, or with `admin` off).
    package var adminPort: UInt16? { admin?.port }
    /// The webhook's URL as bound (nil unless started, or without a webhook).
    package var webhookURL: String? { webhook?.url }
    /// The hosted realtime URL as bound (nil unless started with `notifications.realtime.path`).
    package var realtimeURL: String? { webhook?.realtimeURL }
    /// Where the webhook keeps notifications ("sqlite PATH" or "redis stream"; nil without a webhook).
    package var webhookStoreDescription: String? { webhook?.storeDescription }

    /// Publishes the configured subscription policies to a PostgreSQL store (for its analysts' view), starts the
    /// upstream client's loop, then binds and starts the gRPC port, the file watcher, the webhook port and the admin
    /// port, in that order; when one fails, what had started is stopped again before the error is thrown.
    package func start() throws(GatewayStartError) {
        do {
            try startParts()
        } catch {
            stops.unwind()
            throw error
        }
        logger.info(
            access.tlsContext == nil ? "serving gRPC (h2c)" : "serving gRPC (TLS)",
            metadata: [
                "address": "\(configuration.grpc.listen.host):\(grpcPort ?? 0)",
                "threads": .stringConvertible(grpc?.http2.eventLoops.count ?? 0),
                "apps": "\(configuration.apps.map(\.name).joined(separator: ","))",
                "rate_budget": "\(configuration.redis.url.map { "shared in \($0)" } ?? "per replica")",
            ])
    }

    private func startParts() throws(GatewayStartError) {
        // The configured policies, for the PostgreSQL analysts' view: published before anything serves.
        try backend?.publishPolicies(configuration)
        // First started, last stopped: the gRPC port's calls and the webhook hand their Apple calls to it until
        // they have stopped.
        upstreamLoop.start()
        if let reason = service.subscriptionState.unavailable {
            logger.warning(
                "no subscription state: SubscriptionState calls answer FAILED_PRECONDITION",
                metadata: ["reason": "\(reason)"])
        }
        stops.push { [upstreamLoop] in upstreamLoop.stop() }
        let served: [any GRPCService] = [
            HealthService(board: board), service, service.retentionMessaging, service.advancedCommerce,
            service.subscriptionState,
        ]
        let services = served + [ReflectionService(listing: served)]
        let server: GRPCServer
        do {
            server = try GRPCServer(
                configuration: configuration.grpc, services: services, metrics: rpcMetrics, accessLog: accessLog,
                tracer: tracer, callGuard: access.callGuard, tls: access.tlsContext,
                onGoaway: { [logger] goaway in Self.log(goaway, logger: logger) })
        } catch {
            throw GatewayStartError("cannot listen on \(configuration.grpc.listen): \(error)")
        }
        server.start()
        grpc = server
        backend?.attach(server.http2.eventLoops)
        callersReload?.checking(server)
        // A failed start drops the calls at once; `stop` shuts this server down gracefully before unwinding.
        stops.push { [unowned self] in
            callersReload?.checking(nil)
            grpc?.shutdown(grace: .zero)
            grpc = nil
        }
        access.watcher.start()
        stops.push { [access] in access.watcher.stop() }
        if let feed {
            let webhook = try WebhookRuntime.start(
                configuration, feed: feed, storeDescription: backend?.description ?? "",
                fleet: backend?.fleet ?? .soleReplica, service: service,
                tracer: tracer ?? SilentTracer(), registry: registry)
            self.webhook = webhook
            stops.push { [unowned self] in
                webhook.stop()
                self.webhook = nil
            }
            // After the commits that made them, from the outbox: never on the path of Apple's webhook answer.
            if let sinks {
                sinks.start()
                stops.push { sinks.stop() }
            }
        }
        if let address = configuration.admin {
            let admin = try startAdmin(address, grpc: server)
            self.admin = admin
            stops.push { [unowned self] in
                admin.beginGracefulShutdown()
                admin.closeAllConnections()
                admin.stop()
                self.admin = nil
            }
        }
    }

    /// A GOAWAY the gRPC port sent: a routine close (NO_ERROR: idle, maximum age, shutdown) at debug, any
    /// other code at warning, since the client then tears its connection down and dials again.
    private static func log(_ goaway: SentGoaway, logger: Logger) {
        let metadata: Logger.Metadata = [
            "code": "\(goaway.code.name)", "reason": "\(goaway.reason)",
            "last_stream_id": .stringConvertible(goaway.lastStreamID),
        ]
        logger.log(level: goaway.code == .noError ? .debug : .warning, "sent GOAWAY", metadata: metadata)
    }

    private func startAdmin(_ address: ListenAddress, grpc server: GRPCServer) throws(GatewayStartError) -> HTTP2Server
    {
        let endpoint = AdminEndpoint(
            registry: registry, board: board, readinessService: AppStoreGatewayService.name,
            connections: { [http2 = server.http2, hook = webhook?.server] in
                var ports = ["grpc": http2.connectionStatistics]
                if let hook { ports["webhook"] = hook.connectionStatistics }
                return ports
            }, verifier: service.verifier,
            rateLimiter: service.rateLimiter, upstream: service.upstreamMetrics,
            appNames: configuration.appNamesByBundleID, token: adminToken)
        let admin: HTTP2Server
        do {
            admin = try HTTP2Server(
                address: address, threads: 1, configuration: AdminEndpoint.transportLimits,
                transport: .cleartextHTTP1,
                responder: HTTPRequestResponder(handler: endpoint), requestHandler: endpoint,
                threadName: "admin-loop")
        } catch {
            throw GatewayStartError("cannot listen on admin \(address): \(error)")
        }
        admin.start()
        return admin
    }

    /// Readiness goes NOT_SERVING at once (liveness, service "", stays SERVING so Kubernetes does not restart
    /// a draining pod); calls are still taken for `shutdown.drainDelay` while the endpoint removal propagates;
    /// then the gRPC port shuts down within `shutdown.grace`, and only then the other ports and the watcher (the
    /// admin port answers probes and scrapes throughout), and last the upstream client's loop. Blocks until everything has stopped: the gRPC port's
    /// shutdown returns as soon as its last connection closes (`GRPCServer.shutdown`).
    package func stop() {
        board.set(.notServing, service: AppStoreGatewayService.name)
        board.set(.notServing, service: RetentionMessagingService.name)
        Self.wait(until: .now() + configuration.shutdown.drainDelay)
        if let outcome = grpc?.shutdown() {
            logger.info(
                outcome == .drained
                    ? "gRPC port drained" : "gRPC port closed: shutdown.grace ended calls still running (UNAVAILABLE)",
                metadata: ["outcome": "\(outcome)"])
        }
        grpc = nil
        stops.unwind()
        // Last: whatever still runs (a projector's step, a sink) fails its store call and ends.
        backend?.close()
        // The spans of the last calls, within tracing.timeout.
        tracer?.shutdown(timeout: configuration.tracing.timeout)
    }

    /// Sleeps until `deadline` on the monotonic clock (the drain delay is time, not a state to wait on: the
    /// endpoint removal propagates elsewhere, and calls keep coming meanwhile). One absolute sleep, resumed
    /// after an interruption, so no wall-clock step moves it.
    private static func wait(until deadline: MonotonicInstant) {
        var limit = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &limit, nil) == EINTR {}
    }

    /// The admin bearer token's file, to be re-read when it changes; without a token, a warning when the admin
    /// port listens beyond loopback: its `/metrics` names every caller, app and budget.
    private static func adminTokenFile(
        _ configuration: GatewayConfiguration, token: AdminBearerToken?, logger: Logger
    ) -> [AccessFileWatcher.Watched] {
        guard let address = configuration.admin else { return [] }
        guard let token else {
            if !["localhost", "::1"].contains(address.host) && !address.host.hasPrefix("127.") {
                logger.warning(
                    "the admin port asks for no bearer token: anyone who reaches it may read /metrics",
                    metadata: ["hint": "set admin.bearerTokenFile, or keep the port to your monitoring network"])
            }
            return []
        }
        return [
            token.watching(
                path: configuration.adminBearerTokenFile, allowReadableFile: configuration.apple.allowReadableKeyFiles,
                logger: logger)
        ]
    }

    /// The resume-token key ring's file, to be re-read when it changes; without one, a warning: the random
    /// key in use makes tokens good for this process only.
    private static func resumeTokenKeyRing(
        _ configuration: GatewayConfiguration, service: AppStoreGatewayService, logger: Logger
    ) -> [AccessFileWatcher.Watched] {
        let path = configuration.notifications.resumeTokenKeyFile
        guard !path.isEmpty else {
            logger.warning(
                """
                StreamNotifications resume tokens are signed with a random key of this process: they will not \
                resume a stream after a restart or on another replica
                """,
                metadata: ["hint": "set notifications.resumeTokenKeyFile to a key ring shared by every replica"])
            return []
        }
        return [
            service.resumeTokenKeys.watching(
                path: path, allowReadableFile: configuration.apple.allowReadableKeyFiles, logger: logger)
        ]
    }
}
