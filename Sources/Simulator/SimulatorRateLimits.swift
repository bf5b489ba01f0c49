import AppStoreDomain
import GatewayFoundation

/// Apple's rate limits, per app, endpoint and environment (Apple's App Store Server API documentation), on AppStoreDomain's
/// `RateLimiter`: Apple's per-second rates × `scale`, a budget of rate × window, sandbox at its factor.
struct SimulatorRateLimits: Sendable {
    let limiter: RateLimiter
    let clock: any GatewayClock

    init(scale: Double, window: Duration, sandboxFactor: Double, clock: any GatewayClock) {
        let windowSeconds = Double(window.wholeMilliseconds) / 1000
        var overrides: [AppleEndpoint: EndpointRate] = [:]
        for endpoint in AppleEndpoint.allCases {
            let perSecond = max(endpoint.defaultProductionRate * scale, 1e-6)
            overrides[endpoint] = EndpointRate(
                perSecond: perSecond, burst: max(1, Int((perSecond * windowSeconds).rounded(.down))))
        }
        limiter = RateLimiter(defaults: RateLimits(sandboxFactor: sandboxFactor, overrides: overrides))
        self.clock = clock
    }

    /// Nil when the request may go on, else when the next one will be admitted (for `Retry-After`).
    func admit(bundleId: String, endpoint: AppleEndpoint, environment: AppleEnvironment) -> WallTime? {
        let key = RateLimitKey(bundleID: bundleId, endpoint: endpoint, environment: environment)
        switch limiter.tryTake(key: key, now: clock.monotonicNow()) {
        case .taken: return nil
        case .refused(let wait):
            return WallTime(millisecondsSince1970: clock.wallNow().millisecondsSince1970 + wait.millisecondsRoundedUp)
        }
    }

    /// Refuses the triple until `wallTime` (an injected 429 with that `Retry-After`).
    func block(bundleId: String, endpoint: AppleEndpoint, environment: AppleEnvironment, until wallTime: WallTime) {
        let key = RateLimitKey(bundleID: bundleId, endpoint: endpoint, environment: environment)
        limiter.blockUntil(wallTime: wallTime, key: key, clock: clock)
    }
}
