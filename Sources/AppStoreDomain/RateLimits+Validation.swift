extension RateLimits {
    /// Checks the values a config file could get wrong; the error names the key.
    package func validate() throws(ConfigurationError) {
        guard sandboxFactor > 0, sandboxFactor <= 1 else {
            throw ConfigurationError(key: "rateLimits.sandboxFactor", problem: "must be in (0, 1]")
        }
        for (endpoint, rate) in overrides {
            guard rate.perSecond > 0, rate.perSecond.isFinite else {
                throw ConfigurationError(key: "rateLimits.\(endpoint).perSecond", problem: "must be positive")
            }
            guard rate.burst >= 1 else {
                throw ConfigurationError(key: "rateLimits.\(endpoint).burst", problem: "must be at least 1")
            }
        }
    }
}
