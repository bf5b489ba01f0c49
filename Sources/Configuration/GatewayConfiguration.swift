import AppStoreClient
import AppStoreDomain
import Edge
import GRPC
import GatewayFoundation
import NotificationStore
import Services
import SignedData
import SubscriptionState
import Tracing

/// The gateway's whole configuration (README "Configuration" documents every key and default).
package struct GatewayConfiguration: Sendable {
    /// The gRPC port: `listen`, `threads`, the keys under `limits` and `connection`, and `shutdown.grace`, in the
    /// gRPC server's own configuration, whose defaults are the keys' defaults (0 where a key allows it: nil).
    package var grpc = GRPCServerConfiguration()
    /// Admin HTTP/1.1 address for `/metrics`, `/healthz`, `/readyz`; nil ("") = off. Key `admin`, default "0.0.0.0:9090".
    package var admin: ListenAddress? = ListenAddress(host: "0.0.0.0", port: 9090)
    /// The bearer token `/metrics` (and every admin path but the probes' `/healthz` and `/readyz`) requires:
    /// the path of a file holding it, re-read when it changes; "" (the default) = no token asked for. Key
    /// `admin.bearerTokenFile` (with `admin` a mapping whose `listen` is the address).
    package var adminBearerTokenFile = ""
    /// Shutdown timing: `shutdown.drainDelay` (`shutdown.grace` is the gRPC server's, `grpc.shutdownGrace`).
    package var shutdown = Shutdown()
    /// The Apple apps callers may name. Key `apps`.
    package var apps: [App] = []

    /// Each app's name by its bundle id (the first app wins a bundle id listed twice): how metrics and logs
    /// name an app that the Apple-side code knows by bundle id.
    package var appNamesByBundleID: [String: String] {
        Dictionary(apps.map { ($0.bundleId, $0.name) }, uniquingKeysWith: { first, _ in first })
    }
    /// Apple's hosts. Keys under `apple`.
    package var apple = Apple()
    /// Signed-data verification. Keys under `verification`.
    package var verification = Verification()
    /// Logging. Keys under `logging`.
    package var logging = Logging()
    /// Local rate limits for calls to Apple. Keys under `rateLimits` (per app: `apps[i].rateLimits`).
    package var rateLimits = RateLimiting()
    /// Retries of failed Apple calls. Keys under `retries`.
    package var retries = RetryPolicy.defaults
    /// Transaction history paging. Keys under `history`.
    package var history = History()
    /// Notification history streams. Keys under `notifications`.
    package var notifications = Notifications()
    /// The subscription state. Keys under `subscriptions` (entitlements are per app: `apps[i].entitlements`).
    package var subscriptions = SubscriptionStateSettings()
    /// The rate budget shared by replicas. Keys under `redis` (see `GatewayConfiguration+Redis.swift`).
    package var redis = Redis()
    /// TLS on the gRPC port; nil = h2c. Keys under `tls` (see `GatewayConfiguration+Access.swift`).
    package var tls: TLS?
    /// How callers prove who they are. Keys under `authentication`.
    package var authentication = Authentication()
    /// Who may call, for which apps, with what share; nil = open (anyone, every app). Key `callers`.
    package var callers: [Caller]?
    /// OpenTelemetry trace export; off without an endpoint. Keys under `tracing` (and `OTEL_*` variables).
    package var tracing = Tracing()

    package init() {}

    /// Shutdown timing.
    package struct Shutdown: Sendable, Hashable {
        /// After SIGTERM, readiness is NOT_SERVING but calls are still taken for this long, while endpoints
        /// propagate (Kubernetes removes the pod from Services concurrently); then GOAWAY, and calls in flight
        /// get `shutdown.grace`. `shutdown.drainDelay`, 5s.
        package var drainDelay: Duration = .seconds(5)
        package init() {}
    }

    // Each section's type is its layer's own settings type, named here by its section.
    /// The `history` keys: the service's own.
    package typealias History = AppStoreGatewayService.History
    /// The `apple` keys: the Apple API client's own.
    package typealias Apple = AppStoreAPIClient.Apple
    /// The `rateLimits` keys: the Apple API client's own.
    package typealias RateLimiting = AppStoreAPIClient.RateLimiting
    /// The `verification` keys: the verifier's own settings.
    package typealias Verification = SignedDataVerifier.Settings
    /// Apple's online checks (`verification.onlineChecks` and friends), the verifier's own.
    package typealias OnlineChecks = SignedDataVerifier.OnlineChecks
    /// An app's environment policy (`apps[i].environment`), the domain's own type.
    package typealias EnvironmentPolicy = AppStoreDomain.EnvironmentPolicy
    /// One configured app (`apps[i]`), the domain's own type.
    package typealias App = AppStoreDomain.App
    /// One entry of `callers`, the domain's own type.
    package typealias Caller = ListedCaller
    /// One app's default realtime answer (`notifications.realtime.defaults[i]`), the domain's own type.
    package typealias RealtimeDefault = AppStoreDomain.RealtimeDefault

    /// Notification history streams (StreamNotifications).
    package struct Notifications: Sendable, Hashable {
        /// `notifications.resumeTokenKeyFile`: the key ring that authenticates resume tokens (HMAC-SHA256), one
        /// base64 key of 32 to 256 bytes per line, `#` comments allowed; the first key signs, every key
        /// verifies. Default "": a random key per process (tokens survive neither a restart nor another replica).
        package var resumeTokenKeyFile = ""
        /// `notifications.resumeTokenMaxAge`: a resume token issued longer ago than this is refused
        /// (INVALID_ARGUMENT, RESUME_TOKEN_EXPIRED). Default 30d.
        package var resumeTokenMaxAge: Duration = .seconds(30 * 86_400)
        /// The webhook receiver. Keys under `notifications.webhook` (`GatewayConfiguration+Webhook.swift`).
        package var webhook = Webhook()
        /// Its store. Keys under `notifications.store`.
        package var store = NotificationStorage()
        /// The hosted realtime URL on the webhook listener. Keys under `notifications.realtime`.
        package var realtime = Realtime()
        /// Endpoints every stored notification is relayed to, as Apple sent it. Key `notifications.forward`.
        package var forward: [NotificationRelay.Settings] = []
        package init() {}
    }

    /// Logging.
    package struct Logging: Sendable, Hashable {
        /// trace, debug, info, notice, warning, error or critical. `logging.level`, info.
        package var level = "info"
        /// `json` (one object per line) or `text`. `logging.format`, json.
        package var format = "json"
        /// One info line per RPC (health checks excepted). `logging.accessLog`, true.
        package var accessLog = true
        package init() {}
    }
}
