import AppStoreClient
import AppStoreDomain
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// appstore.gateway.v1.AppStoreGateway: every RPC of the public contract (GetHistory, StreamNotifications and
/// VerifyJWS here, the rest of Apple's API through `AppStoreAPIMethods`).
package struct AppStoreGatewayService: GRPCService {
    /// The service's full name, as health checks and reflection name it.
    package static let name = "appstore.gateway.v1.AppStoreGateway"

    private let verifyJWS: VerifyJWSHandler
    /// The signed-data verifier, for its cache counters.
    package let verifier: SignedDataVerifier
    /// The token buckets of Apple's rate limits, for their levels.
    package let rateLimiter: RateLimiter
    /// The upstream HTTP client's counters, for the metrics.
    package let upstreamMetrics: @Sendable () -> UpstreamMetrics
    private let getHistory: GetHistoryHandler
    private let notifications: StreamNotificationsHandler
    let api: AppStoreAPIMethods
    package let pool: VerificationPool
    package let apps: [App]
    package let retention: NotificationRetention
    /// The realtime requests of the hosted realtime URL and the ServeRealtimeRequests streams answering them.
    package let realtime: RealtimeBroker
    /// Signs and encodes the answers to realtime requests.
    package let realtimeAnswering: RealtimeAnswering
    private let serveRealtime: ServeRealtimeRequestsHandler

    /// Builds the service from parts already built by the composition root (the CLI reads the files):
    /// `verifier` trusts the configured roots, `client` calls Apple with the apps' keys, `resumeTokenKeys` seals
    /// and opens StreamNotifications resume tokens (`ResumeTokenKeyRing`). The settings give the apps, limits and
    /// the tokens' maximum age. `live` (the webhook's store) lets StreamNotifications `follow`. Verdicts and
    /// coalesced calls count in `metrics`.
    package init(
        apps configured: [App], verification: SignedDataVerifier.Settings, history: History,
        resumeTokenMaxAge: Duration, store: NotificationStoreSettings,
        realtime realtimeSettings: RealtimeBroker.Settings,
        verifier: SignedDataVerifier, client: AppStoreAPIClient, resumeTokenKeys: ResumeTokenKeyRing,
        clock: any GatewayClock = SystemClock(), live: LiveNotificationFeed? = nil,
        subscriptions: SubscriptionStateSettings = SubscriptionStateSettings(),
        metrics: ServiceMetrics = ServiceMetrics()
    ) {
        self.verifier = verifier
        self.resumeTokenKeys = resumeTokenKeys
        let pool = VerificationPool(
            threads: verification.poolThreads, queueLimit: verification.poolQueue)
        self.pool = pool
        apps = configured
        let retention = NotificationRetention(
            milliseconds: store.retention.wholeMilliseconds)
        self.retention = retention
        verifyJWS = VerifyJWSHandler(
            verifier: verifier, apps: AppDirectory(configured),
            allowUnboundVerification: verification.allowUnboundVerification, pool: pool,
            verifications: metrics.verifications)
        rateLimiter = client.rateLimiter
        upstreamMetrics = { client.upstreamMetrics }
        realtime = RealtimeBroker(
            maxPendingPerStream: realtimeSettings.maxPendingPerStream, maxStreams: realtimeSettings.maxStreams)
        realtimeAnswering = RealtimeAnswering(client: client)
        serveRealtime = ServeRealtimeRequestsHandler(broker: realtime, apps: AppDirectory(configured))
        (subscriptionState, subscriptionProjector) = Self.subscriptionState(
            apps: configured, live: live, settings: subscriptions, verifier: verifier, client: client, clock: clock,
            maxPages: history.maxPages, resumeTokenKeys: resumeTokenKeys)
        // What the pass-through RPCs verify for their callers is an Apple read of the state, when there is one.
        let feed = subscriptionState.states.map { AppleReadFeed(states: $0) }
        appleReadFeed = feed
        var getHistory = GetHistoryHandler(
            client: client, verifier: verifier, maxPages: history.maxPages,
            maxResponseBytes: history.maxResponseBytes, clock: clock, coalescing: metrics.coalescing)
        getHistory.feed = feed
        self.getHistory = getHistory
        var notifications = StreamNotificationsHandler(
            client: client, verifier: verifier, resumeTokenKeys: resumeTokenKeys,
            resumeTokenMaxAge: resumeTokenMaxAge,
            clock: clock)
        api = AppStoreAPIMethods(
            client: client, verifier: verifier, clock: clock, maxPages: history.maxPages,
            maxResponseBytes: history.maxResponseBytes, coalescing: metrics.coalescing, feed: feed)
        notifications.live = live
        notifications.verifications = metrics.verifications
        self.notifications = notifications
        reconciler = live.map {
            NotificationReconciler(
                client: client, verifier: verifier, apps: configured, feed: $0, clock: clock,
                window: store.reconcileWindow,
                retention: retention)
        }
    }

    /// appstore.gateway.v1.SubscriptionState: answers from the gateway's own state (FAILED_PRECONDITION on a
    /// gateway whose notification store cannot keep it).
    package let subscriptionState: SubscriptionStateService
    /// Projects the webhook's log into the subscription state (nil without a state); `GatewayApp` runs it.
    package let subscriptionProjector: SubscriptionProjector?
    /// Hands what the pass-through RPCs verified for their callers to the subscription state (nil without one).
    let appleReadFeed: AppleReadFeed?

    private static func subscriptionState(
        apps: [App], live: LiveNotificationFeed?, settings: SubscriptionStateSettings,
        verifier: SignedDataVerifier, client: AppStoreAPIClient, clock: any GatewayClock, maxPages: Int,
        resumeTokenKeys: ResumeTokenKeyRing
    ) -> (SubscriptionStateService, SubscriptionProjector?) {
        guard let live else {
            return (
                SubscriptionStateService(
                    unavailable: "it is projected from the webhook's notification log: configure notifications.webhook"),
                nil
            )
        }
        guard let store = live.states else {
            return (
                SubscriptionStateService(
                    unavailable:
                        "the Redis notification store keeps no subscription state: use notifications.store.sqlite"),
                nil
            )
        }
        let statuses = AppleOperationHandler(
            AppleOperation<GetAllSubscriptionStatusesRequest, GetAllSubscriptionStatusesResponse>
                .getAllSubscriptionStatuses,
            client: client, verifier: verifier, clock: clock, maxPages: maxPages)
        let policies = Dictionary(
            apps.map { ($0.name, settings.policy(for: $0)) },
            uniquingKeysWith: { first, _ in first })
        let states = SubscriptionStates(
            store: store, apps: AppDirectory(apps), policies: policies, verifier: verifier, clock: clock,
            metrics: live.stateMetrics, appleReadWeight: settings.appleReadWeight,
            recordCacheSize: settings.recordCacheSize
        ) { request, remaining throws(GatewayError) in
            try await statuses.handle(request, remaining: remaining)
        }
        let events = SubscriptionEventsHandler(
            states: states, tokens: SubscriptionEventTokenCodec(ring: resumeTokenKeys, maxAge: settings.eventRetention))
        return (
            SubscriptionStateService(states: states, events: events),
            SubscriptionProjector(states: states, log: live.store, retention: settings.eventRetention)
        )
    }

    /// The keys of StreamNotifications resume tokens (a reloaded key file replaces them here).
    package let resumeTokenKeys: ResumeTokenKeyRing

    /// The reconciler of the webhook's store (nil without one).
    package let reconciler: NotificationReconciler?

    package var methods: [String: MethodHandler] {
        let verifyJWS = self.verifyJWS
        let getHistory = self.getHistory
        let notifications = self.notifications
        let serveRealtime = self.serveRealtime
        let base: [String: MethodHandler] = [
            // Runs on the call's loop, which drives the Apple request too: the task suspends, the loop never waits.
            // Identical calls share one upstream call, keyed by the request's bytes as received.
            "/\(Self.name)/GetHistory": .unaryWithReceivedBytes(GetHistoryRequest.self) {
                request, received, context throws(GatewayError) -> GetHistoryResponse in
                let remaining = context.remaining
                return try await getHistory.handle(request, received: received, remaining: remaining)
            },
            // A Swift task paging Apple (and, with `follow`, the webhook's store) as the client reads; validation
            // errors go out before any header.
            "/\(Self.name)/StreamNotifications": .serverStreaming(
                StreamNotificationsRequest.self, NotificationEvent.self
            ) {
                request, context, stream throws(RPCStatus) in
                let call: StreamNotificationsHandler.Call
                do throws(GatewayError) {
                    call = try notifications.prepare(call: request)
                } catch {
                    throw error.rpcStatus
                }
                if !request.resumeToken.isEmpty {
                    // Ended by a shutdown before the first event: continue from where the caller came from.
                    await stream.setShutdownStatus(
                        GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                            "resume_token", request.resumeToken, domain: gatewayErrorDomain))
                }
                let remaining = context.remaining
                try await notifications.run(call, remaining: remaining) { event, shutdownStatus throws(RPCStatus) in
                    try await stream.send(event, shutdownStatus: shutdownStatus)
                }
            },
            // Inline on the event loop only when the chain is cached (one ECDSA verify plus parsing); a full
            // chain validation goes to the bounded verification pool.
            "/\(Self.name)/VerifyJWS": .unaryInlineOrTask(VerifyJWSRequest.self) { request, _ in
                verifyJWS.answer(request)
            },
            // A Swift task per stream for as long as the team's service keeps it open; the realtime URL's
            // handler routes Apple's requests to it through the broker.
            "/\(Self.name)/ServeRealtimeRequests": .bidiStreaming(
                ServeRealtimeRequestsRequest.self, RealtimeRequestEvent.self
            ) { requests, context, responses throws(RPCStatus) in
                try await serveRealtime.run(requests, context: context, responses: responses)
            },
        ]
        return base.merging(api.methods(service: Self.name)) { first, _ in first }
    }
}
