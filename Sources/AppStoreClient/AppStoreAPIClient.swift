import AppStoreDomain
import Foundation
import GatewayFoundation
import Logging
import Redis

/// Apple's answer to one App Store Server API call, after retries and environment fallback.
package struct AppleResponse: Sendable {
    /// The environment that answered.
    package var environment: AppleEnvironment
    /// The successful (2xx) HTTP response.
    package var response: UpstreamResponse
    /// Apple's request id, when a request-id header was present.
    package var appleRequestID: String? { response.appleRequestID }
}

/// Calls the App Store Server API for the configured apps: picks the environment, spends the local rate
/// budget, signs with a cached JWT, retries what may succeed, and turns failures into `GatewayError`s.
///
/// Per call: the app's environment policy gives the environments to try (`auto`: production, then
/// sandbox when production answers 4040010 or another not-found code (`isNotFoundInEnvironment`), and on
/// 401 too when `sandboxFallbackOnUnauthorized`). In
/// each environment, attempts follow a `RetrySchedule`; before each attempt a token is reserved from the
/// `RateLimiter` bucket of (bundle id, endpoint, environment), waiting when the wait fits both
/// `rateLimits.maxWait` and the deadline, else RESOURCE_EXHAUSTED with RetryInfo. A 401 drops the
/// cached JWT and retries once with a new one. A 429 blocks the bucket until Apple's `Retry-After` for
/// every caller and ends the call with RESOURCE_EXHAUSTED.
package final class AppStoreAPIClient: Sendable {
    /// The settings in force, taken from the `apple`, `retries` and `rateLimits` keys.
    package struct Settings: Sendable {
        /// Base URLs (`apple.productionURL`, `apple.sandboxURL`).
        package var productionURL: String
        package var sandboxURL: String
        /// `retries.*`.
        package var retryPolicy: RetryPolicy
        /// `rateLimits.maxWait`.
        package var maxRateLimitWait: Duration
        /// `apple.requestTimeout`: the longest single attempt.
        package var requestTimeout: Duration
        /// JWT lifetimes (the documented defaults).
        package var jwt: JWTSettings

        /// Settings from the `apple`, `retries` and `rateLimits` keys.
        package init(apple: Apple, retries: RetryPolicy, rateLimits: RateLimiting) {
            productionURL = apple.productionURL
            sandboxURL = apple.sandboxURL
            retryPolicy = retries
            maxRateLimitWait = rateLimits.maxWait
            requestTimeout = apple.requestTimeout
            jwt = .defaults
        }

        func baseURL(_ environment: AppleEnvironment) -> String {
            environment == .production ? productionURL : sandboxURL
        }
    }

    /// The configured apps.
    package let apps: AppDirectory
    /// The local rate budgets (shared by every call of this client).
    package let rateLimiter: RateLimiter
    /// Where calls take their tokens: `rateLimiter`, or with `redis.url` the budget shared by every
    /// replica (`SharedRateBudget`, falling back to a local share of `rateLimiter`'s rates).
    package let budget: any RateBudget
    /// Request JWTs per app.
    package let jwtCache: JWTCache
    /// The settings in force.
    package let settings: Settings
    let http: UpstreamHTTPClient
    /// The HTTP client's counters (transfers, connections, which loop drove them).
    package var upstreamMetrics: UpstreamMetrics { http.metrics }
    let clock: any GatewayClock
    let logger: Logger
    let sleep: @Sendable (Duration) async throws -> Void
    /// Where attempts, retries, JWT mints and the budgets' waits and refusals are counted.
    package let metrics: AppStoreClientMetrics
    /// Where the CLIENT span of each Apple call (and each Redis budget call) goes.
    package let tracer: any Tracer
    private let signers: [String: any ES256Signer]

    /// A client for `apps`, signing with `signers` (by bundle id; `AppKeySigner.loadAll`
    /// reads them from the apps' key files): an app that calls Apple without one fails start-up with a
    /// `ConfigurationError` naming `apps[i].privateKeyFile`. `sleep` waits for rate-limit slots and
    /// backoffs (tests may shorten it). With `redis.url` the budget is shared by the replicas; with `fairShares`
    /// (a `callers` list) listed callers compete for each app's bucket by weight. Calls, budgets and fair shares
    /// count in `metrics`.
    package init(
        apps configured: [App], apple: Apple, rateLimits: RateLimiting, retries: RetryPolicy,
        redis: SharedRateBudget.Settings, fairShares: Bool, http: UpstreamHTTPClient,
        signers: [String: any ES256Signer],
        clock: any GatewayClock = SystemClock(), logger: Logger = Logger(label: "appstore-gateway.upstream"),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        metrics: AppStoreClientMetrics = AppStoreClientMetrics(), tracer: any Tracer = SilentTracer()
    ) throws(ConfigurationError) {
        self.metrics = metrics
        self.tracer = tracer
        var loaded: [String: any ES256Signer] = [:]
        for (index, app) in configured.enumerated() where app.environment != .xcode {
            guard let given = signers[app.bundleId] else {
                throw ConfigurationError(key: "apps[\(index)].privateKeyFile", problem: "no signing key was loaded")
            }
            loaded[app.bundleId] = given
        }
        var perApp: [String: RateLimits] = [:]
        for app in configured { perApp[app.bundleId] = app.rateLimits }
        try rateLimits.defaults.validate()
        for limits in perApp.values { try limits.validate() }
        self.signers = loaded
        apps = AppDirectory(configured)
        rateLimiter = RateLimiter(defaults: rateLimits.defaults, perApp: perApp)
        var budget: any RateBudget
        let appNames = Dictionary(configured.map { ($0.bundleId, $0.name) }, uniquingKeysWith: { first, _ in first })
        if redis.url != nil {
            let share = redis.fallbackShare
            budget = SharedRateBudget(
                settings: redis, limits: rateLimiter,
                fallback: RateLimiter(
                    defaults: rateLimits.defaults.scaled(by: share),
                    perApp: perApp.mapValues { $0.scaled(by: share) }),
                appNames: appNames,
                reservationHorizon: rateLimits.maxWait,
                clock: clock, metrics: metrics.sharedBudget, tracer: tracer)
        } else {
            budget = rateLimiter
        }
        if fairShares {
            // Listed callers compete for each app's bucket by weight (docs: README "Callers").
            budget = FairShareBudget(
                inner: budget, clock: clock,
                appNames: appNames,
                metrics: metrics.fairShares, sleep: sleep)
        }
        self.budget = budget
        settings = Settings(apple: apple, retries: retries, rateLimits: rateLimits)
        jwtCache = JWTCache(settings: settings.jwt)
        self.http = http
        self.clock = clock
        self.logger = logger
        self.sleep = sleep
    }

    /// The environments a call tries, in order: the requested one alone, else the app's policy.
    package func environments(for app: App, requested: AppleEnvironment?) -> [AppleEnvironment] {
        if let requested { return [requested] }
        switch app.environment {
        case .production: return [.production]
        case .sandbox: return [.sandbox]
        case .auto: return [.production, .sandbox]
        case .xcode: return []
        }
    }

    /// Calls `endpoint` at `path` (already filled in, see `AppleEndpoint.path`) with `query` for `app`,
    /// returning Apple's 2xx answer. `deadline` is on `clock`'s monotonic time.
    package func call(
        _ endpoint: AppleEndpoint, path: String, query: String = "", body: [UInt8]? = nil,
        app: App, environment requested: AppleEnvironment? = nil, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> AppleResponse {
        guard app.environment != .xcode else {
            throw .invalidArgument(
                field: "app",
                problem: "\(app.name) is configured for Xcode data (environment: xcode); Apple has no server for it")
        }
        let plan = environments(for: app, requested: requested)
        var tried: [AppleEnvironment] = []
        for (index, environment) in plan.enumerated() {
            tried.append(environment)
            let call = AppleCall(
                client: self, endpoint: endpoint, path: path, query: query, body: body, app: app,
                environment: environment, deadline: deadline)
            switch try await call.run() {
            case .answered(let response):
                return AppleResponse(environment: environment, response: response)
            case .refused(let final):
                let failure = final.failure
                let hasNext = index + 1 < plan.count
                let notFound = failure.code?.isNotFoundInEnvironment == true
                let unauthorized = failure.httpStatus == 401 && app.sandboxFallbackOnUnauthorized
                if hasNext && (notFound || unauthorized) {
                    logger.info(
                        "trying the next environment",
                        metadata: [
                            "app": "\(app.name)", "endpoint": "\(endpoint)", "environment": "\(environment)",
                            "http_status": "\(failure.httpStatus)",
                            "apple_error_code": "\(failure.code.map { String($0.rawValue) } ?? "-")",
                            "apple_request_id": "\(failure.appleRequestID ?? "-")",
                        ])
                    continue
                }
                let httpStatus = failure.code?.httpStatus ?? failure.httpStatus
                if httpStatus == 404 && !(failure.code?.isRetryable ?? false) {
                    throw .appleNotFound(failure, tried: tried)
                }
                throw GatewayError.forApple(
                    failure, endpoint: endpoint, retryAfter: final.retryAfter, now: clock.wallNow())
            }
        }
        throw .internalBug("no environment to call for app \(app.name)", requestID: nil)
    }

    func signer(for app: App) throws(GatewayError) -> any ES256Signer {
        guard let signer = signers[app.bundleId] else {
            throw .internalBug("no signing key loaded for app \(app.name)", requestID: nil)
        }
        return signer
    }
}

/// Apple's final non-2xx answer in one environment, with its `Retry-After` if any.
struct AppleFinalAnswer: Sendable {
    var failure: AppleFailure
    var retryAfter: WallTime?
}

/// How the attempts in one environment ended, short of an error that ends the whole call.
enum AppleCallOutcome: Sendable {
    /// Apple answered 2xx.
    case answered(UpstreamResponse)
    /// Apple's final error answer there.
    case refused(AppleFinalAnswer)
}
