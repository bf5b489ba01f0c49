import AppStoreDomain
import GRPC
import GatewayFoundation

/// The gateway's whole configuration (README "Configuration" documents every key and default).
public struct GatewayConfiguration: Sendable {
    /// The gRPC port: `listen`, `threads`, the keys under `limits` and `connection`, and `shutdown.grace`, in the
    /// gRPC server's own configuration, whose defaults are the keys' defaults (0 where a key allows it: nil).
    public var grpc = GRPCServerConfiguration()
    /// Admin HTTP/1.1 address for `/metrics`, `/healthz`, `/readyz`; nil ("") = off. Key `admin`, default "0.0.0.0:9090".
    public var admin: ListenAddress? = ListenAddress(host: "0.0.0.0", port: 9090)
    /// The bearer token `/metrics` (and every admin path but the probes' `/healthz` and `/readyz`) requires:
    /// the path of a file holding it, re-read when it changes; "" (the default) = no token asked for. Key
    /// `admin.bearerTokenFile` (with `admin` a mapping whose `listen` is the address).
    public var adminBearerTokenFile = ""
    /// Shutdown timing: `shutdown.drainDelay` (`shutdown.grace` is the gRPC server's, `grpc.shutdownGrace`).
    public var shutdown = Shutdown()
    /// The Apple apps callers may name. Key `apps`.
    public var apps: [App] = []

    /// Each app's name by its bundle id (the first app wins a bundle id listed twice): how metrics and logs
    /// name an app that the Apple-side code knows by bundle id.
    public var appNamesByBundleID: [String: String] {
        Dictionary(apps.map { ($0.bundleId, $0.name) }, uniquingKeysWith: { first, _ in first })
    }
    /// Apple's hosts. Keys under `apple`.
    public var apple = Apple()
    /// Signed-data verification. Keys under `verification`.
    public var verification = Verification()
    /// Logging. Keys under `logging`.
    public var logging = Logging()
    /// Local rate limits for calls to Apple. Keys under `rateLimits` (per app: `apps[i].rateLimits`).
    public var rateLimits = RateLimiting()
    /// Retries of failed Apple calls. Keys under `retries`.
    public var retries = RetryPolicy.defaults
    /// Transaction history paging. Keys under `history`.
    public var history = History()
    /// Notification history streams. Keys under `notifications`.
    public var notifications = Notifications()
    /// The rate budget shared by replicas. Keys under `redis` (see `GatewayConfiguration+Redis.swift`).
    public var redis = Redis()
    /// TLS on the gRPC port; nil = h2c. Keys under `tls` (see `GatewayConfiguration+Access.swift`).
    public var tls: TLS?
    /// How callers prove who they are. Keys under `authentication`.
    public var authentication = Authentication()
    /// Who may call, for which apps, with what share; nil = open (anyone, every app). Key `callers`.
    public var callers: [Caller]?
    /// OpenTelemetry trace export; off without an endpoint. Keys under `tracing` (and `OTEL_*` variables).
    public var tracing = Tracing()

    public init() {}

    /// Shutdown timing.
    public struct Shutdown: Sendable, Hashable {
        /// After SIGTERM, readiness is NOT_SERVING but calls are still taken for this long, while endpoints
        /// propagate (Kubernetes removes the pod from Services concurrently); then GOAWAY, and calls in flight
        /// get `shutdown.grace`. `shutdown.drainDelay`, 5s.
        public var drainDelay: Duration = .seconds(5)
        public init() {}
    }

    /// How an app's calls pick Apple's environment.
    public enum EnvironmentPolicy: String, Sendable, Hashable, CaseIterable {
        /// Production only.
        case production
        /// Sandbox only.
        case sandbox
        /// Production, then sandbox when production does not know the transaction (4040010).
        case auto
        /// Xcode and LocalTesting data only (StoreKit testing): signed by Xcode, not Apple, so VerifyJWS decodes
        /// it without a signature check and says so; Apple's API is never called for such an app.
        case xcode
    }

    /// One Apple app and its In-App Purchase key.
    public struct App: Sendable, Hashable {
        /// What callers put in `app`. `apps[i].name`.
        public var name: String
        /// The app's bundle id (callers may use it as `app` too). `apps[i].bundleId`.
        public var bundleId: String
        /// The App Store app id; required to verify production data. `apps[i].appAppleId`.
        public var appAppleId: Int64?
        /// The In-App Purchase key's issuer id (UUID). `apps[i].issuerId`.
        public var issuerId: String
        /// The key id (10 characters). `apps[i].keyId`.
        public var keyId: String
        /// Path of the `.p8` private key. `apps[i].privateKeyFile`.
        public var privateKeyFile: String
        /// `apps[i].environment`: production, sandbox or auto (default auto).
        public var environment: EnvironmentPolicy
        /// With `auto`, also try sandbox when production answers 401 (some teams' keys only work in
        /// sandbox before release). `apps[i].sandboxFallbackOnUnauthorized`, default false.
        public var sandboxFallbackOnUnauthorized: Bool
        /// This app's rate limits (the global `rateLimits` with `apps[i].rateLimits` applied on top);
        /// nil when the app has no overrides.
        public var rateLimits: RateLimits?

        public init(
            name: String, bundleId: String, appAppleId: Int64?, issuerId: String, keyId: String,
            privateKeyFile: String, environment: EnvironmentPolicy,
            sandboxFallbackOnUnauthorized: Bool = false, rateLimits: RateLimits? = nil
        ) {
            self.name = name
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.issuerId = issuerId
            self.keyId = keyId
            self.privateKeyFile = privateKeyFile
            self.environment = environment
            self.sandboxFallbackOnUnauthorized = sandboxFallbackOnUnauthorized
            self.rateLimits = rateLimits
        }
    }

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

    /// Signed-data verification.
    public struct Verification: Sendable, Hashable {
        /// DER or PEM root certificates trusted for Apple-signed data; empty = the built-in Apple Root CA - G3.
        /// `verification.rootCertificates`.
        public var rootCertificates: [String] = []
        /// Trust the built-in Apple Root CA - G3 besides `rootCertificates` (the simulator demo does).
        public var trustBuiltInAppleRoot = false
        /// Verified chains remembered (LRU). `verification.chainCacheSize`, 1024.
        public var chainCacheSize = 1024
        /// JWS whose signature verified, remembered by SHA-256 (see `GatewayConfiguration+SignatureCache.swift`).
        /// `verification.signatureCacheSize`, 4096; 0 disables.
        public var signatureCacheSize = 4096
        /// Validate chains at the current time instead of the payload's signedDate. `verification.useCurrentTime`.
        public var useCurrentTime = false
        /// Let a VerifyJWS without `app` verify signature and chain only, bound to no app (the old fail-open
        /// behaviour). `verification.allowUnboundVerification`, false: an empty `app` means the only configured
        /// app, and is INVALID_ARGUMENT when several are configured.
        public var allowUnboundVerification = false
        /// Worker threads for VerifyJWS calls whose chain is not cached (a full X.509 validation, kept off the
        /// event loops). `verification.poolThreads`, 2.
        public var poolThreads = 2
        /// Such calls waiting for a worker at most; more are RESOURCE_EXHAUSTED with RetryInfo.
        /// `verification.poolQueue`, 64.
        public var poolQueue = 64
        /// How long a chain that failed validation is refused from memory (for the same verification time)
        /// before it is validated again. `verification.negativeCacheTTL`, 30s; 0 disables.
        public var negativeCacheTTL: Duration = .seconds(30)
        /// Apple's online checks (OCSP revocation of leaf and intermediate, validation at the current time).
        /// `verification.onlineChecks` and friends, see `GatewayConfiguration+OnlineChecks.swift`.
        public var onlineChecks = OnlineChecks()
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

    /// Transaction history paging.
    public struct History: Sendable, Hashable {
        /// Most pages one `all_pages` GetHistory call fetches. `history.maxPages`, 50.
        public var maxPages = 50
        /// Largest `all_pages` GetHistory response, in bytes: paging stops before the response would grow past
        /// it (then `has_more` and `revision` continue). `history.maxResponseBytes`, 4,000,000 (under the 4 MiB
        /// default receive limit of grpcio, grpc-go and grpc-java).
        public var maxResponseBytes = 4_000_000
        public init() {}
    }

    /// Notification history streams (StreamNotifications).
    public struct Notifications: Sendable, Hashable {
        /// `notifications.resumeTokenKeyFile`: the key ring that authenticates resume tokens (HMAC-SHA256), one
        /// base64 key of 32 to 256 bytes per line, `#` comments allowed; the first key signs, every key
        /// verifies. Default "": a random key per process (tokens survive neither a restart nor another replica).
        public var resumeTokenKeyFile = ""
        /// `notifications.resumeTokenMaxAge`: a resume token issued longer ago than this is refused
        /// (INVALID_ARGUMENT, RESUME_TOKEN_EXPIRED). Default 30d.
        public var resumeTokenMaxAge: Duration = .seconds(30 * 86_400)
        /// The webhook receiver. Keys under `notifications.webhook` (`GatewayConfiguration+Webhook.swift`).
        public var webhook = Webhook()
        /// Its store. Keys under `notifications.store`.
        public var store = NotificationStorage()
        /// The hosted realtime URL on the webhook listener. Keys under `notifications.realtime`.
        public var realtime = Realtime()
        public init() {}
    }

    /// Logging.
    public struct Logging: Sendable, Hashable {
        /// trace, debug, info, notice, warning, error or critical. `logging.level`, info.
        public var level = "info"
        /// `json` (one object per line) or `text`. `logging.format`, json.
        public var format = "json"
        /// One info line per RPC (health checks excepted). `logging.accessLog`, true.
        public var accessLog = true
        public init() {}
    }
}
