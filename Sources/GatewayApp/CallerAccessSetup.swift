import AppStoreClient
import AppStoreDomain
import CallerAuthentication
import Configuration
import Edge
import GRPC
import HTTPServer
import Logging
import Metrics
import Services

/// TLS, authentication and the `callers` policy of the gRPC port, built from the configuration: a bad certificate,
/// key or JWKS stops start-up with the key that names it.
struct CallerAccessSetup {
    let callGuard: CallerGuard
    let tlsContext: TLSContext?
    let watcher: AccessFileWatcher

    /// The authenticator of `configuration`'s JWT settings and `callers`, its JWKS loaded: a bad JWKS stops
    /// start-up with the key that names it.
    static func authenticator(_ configuration: GatewayConfiguration) throws(GatewayStartError) -> CallerAuthenticator {
        var verifier: BearerTokenVerifier?
        var keys: JSONWebKeySet?
        if let jwt = configuration.authentication.jwt {
            verifier = BearerTokenVerifier(
                issuer: jwt.issuer, audiences: jwt.audiences,
                maxLifetime: jwt.maxLifetime)
            do {
                keys = try AccessFileWatcher.loadKeys(jwt.jwksFile)
            } catch let error as ConfigurationError {
                throw .invalidConfiguration(error)
            } catch {
                throw .invalidConfiguration(ConfigurationError(key: "authentication.jwt.jwksFile", problem: "\(error)"))
            }
        }
        let authenticator = CallerAuthenticator(
            verifier: verifier, policy: CallerPolicy(callers: configuration.callers, apps: configuration.apps))
        if let keys { authenticator.replaceKeys(keys) }
        return authenticator
    }

    /// `authenticator`: from `authenticator(_:)`; `others`: more files for the watcher (the resume-token key
    /// ring, the configuration file); its failed reloads count in `registry`.
    init(
        configuration: GatewayConfiguration, authenticator: CallerAuthenticator, metrics: CallerAccessMetrics,
        logger: Logger, registry: MetricsRegistry, others: [AccessFileWatcher.Watched] = []
    ) throws(GatewayStartError) {
        var tlsContext: TLSContext?
        if let tls = configuration.tls {
            do throws(ConfigurationError) {
                try KeyFileAccess.check(
                    tls.privateKeyFile, key: "tls.privateKeyFile",
                    allowReadableFile: configuration.apple.allowReadableKeyFiles)
            } catch {
                throw .invalidConfiguration(error)
            }
            do {
                tlsContext = try TLSContext(
                    certificateChainFile: tls.certificateFile, privateKeyFile: tls.privateKeyFile,
                    clientCAFile: tls.clientCAFile, sessionMaxAge: tls.sessionMaxAge)
            } catch {
                throw .invalidConfiguration(ConfigurationError(key: "tls", problem: "\(error)"))
            }
        }
        callGuard = CallerGuard(
            authenticator: authenticator, identityFromCommonName: configuration.tls?.identityFromCommonName ?? false,
            metrics: metrics)
        self.tlsContext = tlsContext
        watcher = AccessFileWatcher(
            jwt: configuration.authentication.jwt, authenticator: authenticator, tls: configuration.tls,
            context: tlsContext, allowReadableKeyFiles: configuration.apple.allowReadableKeyFiles, logger: logger,
            registry: registry, others: others)
        if configuration.callers == nil {
            logger.warning(
                "no callers are configured: anyone who reaches the gRPC port may use every app and its whole Apple budget",
                metadata: ["hint": "list callers (identity, apps, weight) with authentication.jwt or tls.clientCAFile"])
        } else {
            let policy = authenticator.policy
            if !policy.callersWithEveryPermission.isEmpty {
                logger.warning(
                    """
                    callers without permissions may call every RPC: read, write at Apple, sign with the apps' keys \
                    and serve realtime requests
                    """,
                    metadata: [
                        "callers": "\(policy.callersWithEveryPermission.joined(separator: ","))",
                        "hint": "list callers[].permissions (read, write, sign, realtime) for each",
                    ])
            }
            logger.info(
                "caller checks on",
                metadata: [
                    "callers": "\(configuration.callers?.count ?? 0)",
                    "jwt": "\(configuration.authentication.jwt != nil)",
                    "client_certificates": "\(!(configuration.tls?.clientCAFile ?? "").isEmpty)",
                ])
        }
    }
}
