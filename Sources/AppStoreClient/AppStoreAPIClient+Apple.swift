import AppStoreDomain

extension AppStoreAPIClient {
    /// Apple's hosts.
    public struct Apple: Sendable, Hashable {
        /// `apple.productionURL`.
        public var productionURL = "https://api.storekit.apple.com"
        /// `apple.sandboxURL`.
        public var sandboxURL = "https://api.storekit-sandbox.apple.com"
        /// A PEM CA bundle for the upstream TLS; empty = the system CAs. When set, it REPLACES the system CAs
        /// (pinning) unless `trustSystemCAs`. `apple.caFile`, default "".
        public var caFile = ""
        /// With `caFile`, trust the system CAs as well. `apple.trustSystemCAs`, default false.
        public var trustSystemCAs = false
        /// Accept `http://` Apple URLs (local test doubles only: the request JWT would travel in clear).
        /// `apple.allowInsecureURL`, default false.
        public var allowInsecureURL = false
        /// Longest single HTTP attempt to Apple (the caller's deadline may cut it shorter).
        /// `apple.requestTimeout`, 10s.
        public var requestTimeout: Duration = .seconds(10)
        /// Longest TCP + TLS connection set-up. `apple.connectTimeout`, 5s.
        public var connectTimeout: Duration = .seconds(5)
        /// Accept `.p8` key files readable by group or others. `apple.allowReadableKeyFiles`, false:
        /// start-up refuses such files, since the key signs for the whole team.
        public var allowReadableKeyFiles = false
        public init() {}
    }

    /// The `rateLimits` section: Apple's per-endpoint budgets, mirrored locally.
    public struct RateLimiting: Sendable, Hashable {
        /// Budgets for every app: `rateLimits.sandboxFactor` (0.1) and
        /// `rateLimits.<endpoint>.{perSecond,burst}` (Apple's published rates, burst = one second's worth).
        public var defaults = RateLimits.defaults
        /// How long a call may queue for a token before RESOURCE_EXHAUSTED. `rateLimits.maxWait`, 1s.
        public var maxWait: Duration = .seconds(1)
        public init() {}
    }
}
