import AppStoreClient
import Configuration
import Foundation
import NotificationStore
import Services
import SignedData

/// The harnesses' composition root, as the CLI's: the configuration's roots and key files read, the upstream
/// client started, the service built from them (online checks off: nothing here answers OCSP).
enum HarnessComposition {
    static func service(
        _ configuration: GatewayConfiguration, live: LiveNotificationFeed? = nil
    ) throws -> AppStoreGatewayService {
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        let verifier = try SignedDataVerifier(configuration: .init(configuration.verification, trustedRoots: roots))
        let client = try AppStoreAPIClient(
            configuration: configuration, http: try UpstreamHTTPClient(configuration.apple),
            signers: try AppKeySigner.loadAll(configuration))
        let resumeTokenKeys =
            try ResumeTokenKeyRing.keys(configuration).map { ResumeTokenKeyRing(keys: $0) } ?? .random()
        return AppStoreGatewayService(
            configuration: configuration, verifier: verifier, client: client, resumeTokenKeys: resumeTokenKeys,
            live: live)
    }
}
