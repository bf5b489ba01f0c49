import AppStoreClient
import Cryptography
import Foundation
import GRPC
import GatewayCore
import NotificationStore
import ProtoCodec
import SignedData

/// appstore.gateway.v1.AppStoreGateway: the three RPCs of the public contract.
public struct AppStoreGatewayService: GRPCService {
    /// The service's full name, as health checks and reflection name it.
    public static let name = "appstore.gateway.v1.AppStoreGateway"

    private let verifyJWS: VerifyJWSHandler
    /// The signed-data verifier, for its cache counters.
    public let verifier: SignedDataVerifier
    /// The token buckets of Apple's rate limits, for their levels.
    public let rateLimiter: RateLimiter
    private let getHistory: GetHistoryHandler
    private let notifications: StreamNotificationsHandler
    private let api: AppStoreAPIMethods
    private let pool: VerificationPool
    private let apps: [GatewayConfiguration.App]

    /// Builds the service from parts already built by the composition root (the CLI reads the files):
    /// `verifier` trusts the configured roots, `client` calls Apple with the apps' keys and reports to its
    /// `events`, `resumeTokenKey` seals StreamNotifications resume tokens (`resumeTokenKey(_:readFile:)`).
    /// `configuration` gives the apps and limits. `live` (the webhook's store) lets StreamNotifications
    /// `follow`.
    public init(
        configuration: GatewayConfiguration, verifier: SignedDataVerifier, client: AppStoreAPIClient,
        resumeTokenKey: [UInt8], clock: any GatewayClock = SystemClock(), live: LiveNotificationFeed? = nil
    ) {
        self.verifier = verifier
        let pool = VerificationPool(
            threads: configuration.verification.poolThreads, queueLimit: configuration.verification.poolQueue)
        self.pool = pool
        apps = configuration.apps
        verifyJWS = VerifyJWSHandler(
            verifier: verifier, apps: AppDirectory(configuration.apps),
            allowUnboundVerification: configuration.verification.allowUnboundVerification, pool: pool,
            events: client.events)
        rateLimiter = client.rateLimiter
        getHistory = GetHistoryHandler(
            client: client, verifier: verifier, maxPages: configuration.history.maxPages,
            maxResponseBytes: configuration.history.maxResponseBytes, clock: clock)
        var notifications = StreamNotificationsHandler(
            client: client, verifier: verifier, resumeTokenKey: resumeTokenKey, clock: clock)
        api = AppStoreAPIMethods(
            client: client, verifier: verifier, clock: clock, maxPages: configuration.history.maxPages,
            maxResponseBytes: configuration.history.maxResponseBytes)
        notifications.live = live
        self.notifications = notifications
        reconciler = live.map {
            NotificationReconciler(
                client: client, verifier: verifier, apps: configuration.apps, feed: $0, clock: clock,
                window: .milliseconds(Int64(clamping: configuration.notifications.store.reconcileWindowMilliseconds)))
        }
    }

    /// The reconciler of the webhook's store (nil without one).
    public let reconciler: NotificationReconciler?

    /// The webhook receiver for `webhook`, verifying with this service's verifier and pool, storing in `live`.
    public func webhook(
        path: String, live: LiveNotificationFeed, clock: any GatewayClock = SystemClock()
    ) -> NotificationWebhook {
        NotificationWebhook(
            path: path, verifier: verifier, pool: pool, apps: apps, store: live.store, clock: clock,
            metrics: live.metrics)
    }

    /// The resume-token key: the `notifications.resumeTokenKey` file (trailing whitespace ignored), else
    /// derived from the apps' private key files (replicas with the same secrets agree), else — only when no
    /// key file is readable, as with injected signers in tests — random for this process. `readFile` reads
    /// a whole file (nil: unreadable).
    public static func resumeTokenKey(
        _ configuration: GatewayConfiguration, readFile: (String) -> [UInt8]?
    ) throws(ConfigurationError) -> [UInt8] {
        let path = configuration.notifications.resumeTokenKeyFile
        if !path.isEmpty {
            guard let data = readFile(path) else {
                throw ConfigurationError(
                    key: "notifications.resumeTokenKey", problem: "cannot read the key file '\(path)'")
            }
            var bytes = data
            while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 {
                bytes.removeLast()
            }
            guard bytes.count >= 16 else {
                throw ConfigurationError(
                    key: "notifications.resumeTokenKey", problem: "the key file '\(path)' must hold at least 16 bytes")
            }
            return bytes
        }
        let derived = ResumeTokenCodec.derivedKey(apps: configuration.apps, readFile: readFile)
        if let derived { return derived }
        var random = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    public var methods: [String: MethodHandler] {
        let verifyJWS = self.verifyJWS
        let getHistory = self.getHistory
        let notifications = self.notifications
        let base: [String: MethodHandler] = [
            // A Swift task: waits on Apple through the upstream client thread, never on the event loop.
            // Identical calls share one upstream call, keyed by the request's bytes as received.
            "/\(Self.name)/GetHistory": .unaryWithReceivedBytes(GetHistoryRequest.self) {
                request, received, context throws(GatewayError) -> GetHistoryResponse in
                let remaining = context.remaining
                return try await getHistory.handle(request, received: received, remaining: remaining)
            },
            // A Swift task paging Apple as the client reads; validation errors go out before any header.
            "/\(Self.name)/StreamNotifications": .serverStreaming(
                StreamNotificationsRequest.self, NotificationEvent.self
            ) {
                request, context, stream throws(RPCStatus) in
                if request.follow {
                    let follow: StreamNotificationsHandler.FollowPlan
                    do throws(GatewayError) {
                        follow = try notifications.prepareFollow(request)
                    } catch {
                        throw error.rpcStatus
                    }
                    if !request.resumeToken.isEmpty {
                        await stream.setShutdownStatus(
                            GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                                "resume_token", request.resumeToken))
                    }
                    let remaining = context.remaining
                    try await notifications.runFollow(follow, remaining: remaining) {
                        event, shutdownStatus throws(RPCStatus) in
                        try await stream.send(event, shutdownStatus: shutdownStatus)
                    }
                    return
                }
                let plan: StreamNotificationsHandler.Plan
                do throws(GatewayError) {
                    plan = try notifications.prepare(request)
                } catch {
                    throw error.rpcStatus
                }
                if !request.resumeToken.isEmpty {
                    // Ended by a shutdown before the first event: continue from where the caller came from.
                    await stream.setShutdownStatus(
                        GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                            "resume_token", request.resumeToken))
                }
                let remaining = context.remaining
                try await notifications.run(plan, remaining: remaining) { event, shutdownStatus throws(RPCStatus) in
                    try await stream.send(event, shutdownStatus: shutdownStatus)
                }
            },
            // Inline on the event loop only when the chain is cached (one ECDSA verify plus parsing); a full
            // chain validation goes to the bounded verification pool.
            "/\(Self.name)/VerifyJWS": .unaryInlineOrTask(VerifyJWSRequest.self) { request, _ in
                verifyJWS.answer(request)
            },
        ]
        return base.merging(api.methods(service: Self.name)) { first, _ in first }
    }
}
