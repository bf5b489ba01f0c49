import Metrics

/// What the gateway's handlers record into (the webhook's and the realtime URL's series are
/// `NotificationMetrics` and `RealtimeMetrics`).
package struct ServiceMetrics: Sendable {
    /// VerifyJWS's verdicts, and those of the notifications StreamNotifications delivers unverified.
    package var verifications: VerificationMetrics
    /// Calls that shared an identical Apple call in flight.
    package var coalescing: CoalescingMetrics

    /// The parts, registered where the composition root chose.
    package init(verifications: VerificationMetrics, coalescing: CoalescingMetrics) {
        self.verifications = verifications
        self.coalescing = coalescing
    }

    /// Both parts in `registry` (by default a registry of its own that nobody reads), verdicts named as
    /// `VerificationMetrics` names them.
    package init(registry: MetricsRegistry = MetricsRegistry(), verdicts: [String] = []) {
        self.init(
            verifications: VerificationMetrics(registry: registry, verdicts: verdicts),
            coalescing: CoalescingMetrics(registry: registry))
    }
}

/// The JWS verifications the handlers answered (VerifyJWS, and StreamNotifications' notifications that failed),
/// by verdict.
package final class VerificationMetrics: Sendable {
    package let verifications: CounterFamily
    /// `verifications`' series of the verdicts named at init, read without the family's lock.
    private let verdictCounters: [String: Counter]

    /// The family, registered in `registry`. `verdicts`: every verdict a verification can end with, resolved
    /// here so counting one takes no lock and allocates nothing (and each series is on the first scrape, at 0);
    /// another verdict is still counted.
    package init(registry: MetricsRegistry, verdicts: [String] = []) {
        let verifications = registry.counter(
            "appstore_gateway_verifications_total", help: "JWS verifications, by verdict.", labelNames: ["verdict"])
        self.verifications = verifications
        verdictCounters = Dictionary(
            verdicts.map { verdict in (verdict, verifications.labels(verdict)) },
            uniquingKeysWith: { first, _ in first })
    }

    /// A JWS was verified with this verdict (e.g. "ok", "invalidSignature").
    func verification(verdict: String) {
        (verdictCounters[verdict] ?? verifications.labels(verdict)).increment()
    }
}

/// GetHistory's calls that joined an identical Apple call already in flight instead of making their own.
package final class CoalescingMetrics: Sendable {
    package let coalesced: CounterFamily

    /// The family, registered in `registry`.
    package init(registry: MetricsRegistry) {
        coalesced = registry.counter(
            "appstore_gateway_coalesced_calls_total",
            help: "Calls that shared an identical Apple call already in flight instead of making their own.",
            labelNames: ["app", "endpoint"])
    }

    /// A call joined an identical one already in flight instead of calling Apple itself.
    func joined(app: String, endpoint: String) {
        coalesced.labels(app, endpoint).increment()
    }
}
