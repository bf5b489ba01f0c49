import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import Logging
import Services
import SignedData

// The gateway's parts built from the whole configuration: each takes its own layer's settings, which
// `GatewayConfiguration` embeds; these hand them over.

extension AppStoreAPIClient {
    /// A client for `configuration`'s apps (see the designated initializer): a `callers` list makes listed
    /// callers compete for each app's budget by weight.
    package convenience init(
        configuration: GatewayConfiguration, http: UpstreamHTTPClient, signers: [String: any ES256Signer],
        clock: any GatewayClock = SystemClock(), logger: Logger = Logger(label: "appstore-gateway.upstream"),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        metrics: AppStoreClientMetrics = AppStoreClientMetrics(), tracer: any Tracer = SilentTracer()
    ) throws(ConfigurationError) {
        try self.init(
            apps: configuration.apps, apple: configuration.apple, rateLimits: configuration.rateLimits,
            retries: configuration.retries, redis: configuration.redis, fairShares: configuration.callers != nil,
            http: http, signers: signers, clock: clock, logger: logger, sleep: sleep, metrics: metrics, tracer: tracer)
    }
}

extension AppStoreGatewayService {
    /// The service for `configuration` (see the designated initializer).
    package init(
        configuration: GatewayConfiguration, verifier: SignedDataVerifier, client: AppStoreAPIClient,
        resumeTokenKeys: ResumeTokenKeyRing, clock: any GatewayClock = SystemClock(), live: LiveNotificationFeed? = nil,
        metrics: ServiceMetrics = ServiceMetrics()
    ) {
        self.init(
            apps: configuration.apps, verification: configuration.verification, history: configuration.history,
            resumeTokenMaxAge: configuration.notifications.resumeTokenMaxAge,
            store: configuration.notifications.store, realtime: configuration.notifications.realtime,
            verifier: verifier, client: client, resumeTokenKeys: resumeTokenKeys, clock: clock, live: live,
            subscriptions: configuration.subscriptions, metrics: metrics)
    }
}
