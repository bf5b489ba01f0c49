import GatewayFoundation

/// A rate for one endpoint: `perSecond` sustained, `burst` at once (config `{ perSecond: 50, burst: 50 }`).
package struct EndpointRate: Sendable, Hashable {
    /// Sustained requests per second; positive.
    package var perSecond: Double
    /// Requests allowed at once from a full bucket; at least 1.
    package var burst: Int

    /// A rate; `burst` defaults to one second's worth (at least 1).
    package init(perSecond: Double, burst: Int? = nil) {
        self.perSecond = perSecond
        self.burst = burst ?? max(1, Int(perSecond.rounded(.down)))
    }
}

/// The `rateLimits` config section: Apple's published production rates per endpoint, sandbox at
/// `sandboxFactor` of them (Apple: sandbox gets 10 %), any endpoint overridable.
package struct RateLimits: Sendable, Hashable {
    /// Share of the production budget granted in sandbox. Default 0.1.
    package var sandboxFactor: Double
    /// Production rates that replace Apple's defaults, by endpoint.
    package var overrides: [AppleEndpoint: EndpointRate]

    /// Apple's published rates, sandbox at 10 %.
    package static let defaults = RateLimits()

    /// Limits with the given factor and overrides.
    package init(sandboxFactor: Double = 0.1, overrides: [AppleEndpoint: EndpointRate] = [:]) {
        self.sandboxFactor = sandboxFactor
        self.overrides = overrides
    }

    /// The rate for `endpoint` in `environment`. Sandbox scales both rate and burst by
    /// `sandboxFactor`, keeping a burst of at least 1.
    package func rate(for endpoint: AppleEndpoint, in environment: AppleEnvironment) -> EndpointRate {
        let production = overrides[endpoint] ?? EndpointRate(perSecond: endpoint.defaultProductionRate)
        switch environment {
        case .production:
            return production
        case .sandbox:
            let burst = max(1, Int((Double(production.burst) * sandboxFactor).rounded(.down)))
            return EndpointRate(perSecond: production.perSecond * sandboxFactor, burst: burst)
        }
    }
}
