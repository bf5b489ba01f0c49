import Metrics
import Observability
import Testing

@testable import Services

/// The verdicts' series.
@Suite struct VerificationMetricsTests {
    /// The verdicts named at start are series from the first scrape (at 0); a verdict not named is still counted.
    @Test func verdictsNamedAtStartAreSeriesAtOnce() {
        let registry = MetricsRegistry()
        let events = VerificationMetrics(registry: registry, verdicts: ["ok", "malformed", "ok"])
        #expect(registry.render().contains(#"appstore_gateway_verifications_total{verdict="malformed"} 0"#))
        events.verification(verdict: "ok")
        events.verification(verdict: "ok")
        events.verification(verdict: "wrongKind")
        let text = registry.render()
        #expect(text.contains(#"appstore_gateway_verifications_total{verdict="ok"} 2"#))
        #expect(text.contains(#"appstore_gateway_verifications_total{verdict="wrongKind"} 1"#))
        #expect(text.contains(#"appstore_gateway_verifications_total{verdict="malformed"} 0"#))
    }
}
