import Metrics

/// What the Apple client records into: its calls to Apple, the local buckets, the per-caller fair shares and the
/// budget shared in Redis (registered whether or not the configuration uses them, so dashboards find them at 0).
package struct AppStoreClientMetrics: Sendable {
    /// Attempts, latency, retries, 429s, JWT mints.
    package var calls: AppleCallMetrics
    /// Waits for and refusals by the local buckets.
    package var rateLimits: RateLimitMetrics
    /// Listed callers' waits for and refusals of their shares.
    package var fairShares: FairShareMetrics
    /// The shared budget's reservations, mode and Redis round trips.
    package var sharedBudget: SharedBudgetMetrics

    /// The parts, registered where the composition root chose.
    package init(
        calls: AppleCallMetrics, rateLimits: RateLimitMetrics, fairShares: FairShareMetrics,
        sharedBudget: SharedBudgetMetrics
    ) {
        self.calls = calls
        self.rateLimits = rateLimits
        self.fairShares = fairShares
        self.sharedBudget = sharedBudget
    }

    /// Every part in `registry` (by default a registry of its own that nobody reads), in the order above.
    package init(registry: MetricsRegistry = MetricsRegistry()) {
        self.init(
            calls: AppleCallMetrics(registry: registry), rateLimits: RateLimitMetrics(registry: registry),
            fairShares: FairShareMetrics(registry: registry), sharedBudget: SharedBudgetMetrics(registry: registry))
    }
}
