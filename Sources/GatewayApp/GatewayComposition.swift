import AppStoreClient
import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import NotificationStore
import Redis
import Services
import SignedData

/// How the gateway's service is built, for `GatewayApp` and the tests' harnesses alike: reads the files the
/// configuration names (trusted roots, the apps' private keys, the resume-token key ring), starts the upstream
/// HTTP client and builds the verifier (with its online checks when configured), the Apple client and the
/// gateway's service from them. A bad file fails with a `ConfigurationError` naming its key.
public enum GatewayComposition {
    /// The gateway's service for `configuration`, its Apple client counting in `clientMetrics` and its handlers
    /// in `serviceMetrics` (registries of their own, read by nobody, by default), feeding `live` (the webhook's
    /// notifications) to its streams.
    public static func service(
        _ configuration: GatewayConfiguration, clientMetrics: AppStoreClientMetrics = AppStoreClientMetrics(),
        serviceMetrics: ServiceMetrics = ServiceMetrics(), live: LiveNotificationFeed? = nil,
        tracer: any Tracer = SilentTracer()
    ) throws(ConfigurationError) -> AppStoreGatewayService {
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        let signers = try AppKeySigner.loadAll(configuration)
        // No ring file: a random key, good for this process only (`GatewayApp` logs a warning).
        let resumeTokenKeys =
            try ResumeTokenKeyRing.keys(configuration).map { ResumeTokenKeyRing(keys: $0) } ?? .random()
        let http = try UpstreamHTTPClient(configuration.apple)
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
