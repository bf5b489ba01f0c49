import AppStoreClient
import Foundation
import GatewayCore
import NotificationStore
import Services
import SignedData

/// The composition root: reads the files the configuration names (trusted roots, the apps' private keys, the
/// resume-token key ring), starts the upstream HTTP client and builds the verifier, the Apple client and the
/// gateway's service from them. A bad file fails start-up with a `ConfigurationError` naming its key.
enum GatewayComposition {
    static func service(
        _ configuration: GatewayConfiguration, events: any GatewayEvents, budgetEvents: any SharedBudgetEvents,
        accessEvents: any AccessEvents, live: LiveNotificationFeed?, tracer: any Tracer = SilentTracer()
    ) throws(ConfigurationError) -> AppStoreGatewayService {
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        let signers = try AppKeySigner.loadAll(configuration)
        // No ring file: a random key, good for this process only (`serve` logs a warning).
        let resumeTokenKeys =
            try ResumeTokenKeyRing.keys(configuration).map { ResumeTokenKeyRing(keys: $0) } ?? .random()
        let http = try UpstreamHTTPClient(configuration.apple)
        let online = configuration.verification.onlineChecks
        let verifier: SignedDataVerifier
        do {
            verifier = try SignedDataVerifier(
                configuration: .init(configuration.verification, trustedRoots: roots),
                ocspTransport: online.enabled
                    ? UpstreamOCSPTransport(http: http, timeout: .milliseconds(Int64(online.timeoutMilliseconds))) : nil
            )
        } catch {
            throw ConfigurationError(key: "verification", problem: "\(error)")
        }
        if let problem = RedisTLSContext.problem(configuration.redis) { throw problem }
        let client = try AppStoreAPIClient(
            configuration: configuration, http: http, signers: signers, events: events, budgetEvents: budgetEvents,
            accessEvents: accessEvents, tracer: tracer)
        return AppStoreGatewayService(
            configuration: configuration, verifier: verifier, client: client, resumeTokenKeys: resumeTokenKeys,
            live: live)
    }
}
