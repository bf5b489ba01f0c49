import AppStoreDomain
import GatewayFoundation

extension AppStoreAPIClient {
    /// Apple's hosts.
    package struct Apple: Sendable, Hashable {
        /// `apple.productionURL`.
        package var productionURL = "https://api.storekit.apple.com"
        /// `apple.sandboxURL`.
        package var sandboxURL = "https://api.storekit-sandbox.apple.com"
        /// The upstream HTTP client's own settings, with its defaults: `apple.caFile`, `apple.trustSystemCAs`
        /// and `apple.connectTimeout` (below) are its fields.
        package var upstream = UpstreamHTTPClient.Configuration()
        /// A PEM CA bundle for the upstream TLS; empty = the system CAs. When set, it REPLACES the system CAs
        /// (pinning) unless `trustSystemCAs`. `apple.caFile`, default "".
        package var caFile: String {
            get { upstream.caFile }
            set { upstream.caFile = newValue }
        }
        /// With `caFile`, trust the system CAs as well. `apple.trustSystemCAs`, default false.
        package var trustSystemCAs: Bool {
            get { upstream.trustSystemCAs }
            set { upstream.trustSystemCAs = newValue }
        }
        /// Accept `http://` Apple URLs (local test doubles only: the request JWT would travel in clear).
        /// `apple.allowInsecureURL`, default false.
        package var allowInsecureURL = false
        /// Longest single HTTP attempt to Apple (the caller's deadline may cut it shorter).
        /// `apple.requestTimeout`, 10s.
        package var requestTimeout: Duration = .seconds(10)
        /// Longest TCP + TLS connection set-up. `apple.connectTimeout`, 5s.
        package var connectTimeout: Duration {
            get { upstream.connectTimeout }
            set { upstream.connectTimeout = newValue }
        }
        /// Accept `.p8` key files readable by group or others. `apple.allowReadableKeyFiles`, false:
        /// start-up refuses such files, since the key signs for the whole team.
        package var allowReadableKeyFiles = false
        package init() {}
    }

    /// The `rateLimits` section: Apple's per-endpoint budgets, mirrored locally.
    package struct RateLimiting: Sendable, Hashable {
        /// Budgets for every app: `rateLimits.sandboxFactor` (0.1) and
        /// `rateLimits.<endpoint>.{perSecond,burst}` (Apple's published rates, burst = one second's worth).
        package var defaults = RateLimits.defaults
        /// How long a call may queue for a token before RESOURCE_EXHAUSTED. `rateLimits.maxWait`, 1s.
        package var maxWait: Duration = .seconds(1)
        package init() {}
    }
}

extension UpstreamHTTPClient {
    /// The client for the gateway's `apple` keys (CA file, system CAs, connect timeout), serving callers on no
    /// event loop on `loop`.
    package convenience init(_ apple: AppStoreAPIClient.Apple, loop: any IOLoop) throws(ConfigurationError) {
        do {
            try self.init(configuration: apple.upstream, loop: loop)
        } catch {
            throw ConfigurationError(key: "apple", problem: "cannot start the upstream HTTP client: \(error)")
        }
    }
}
