import Metrics

/// The PostgreSQL client's series: connection attempts by outcome, connections lost, and failed calls by kind.
/// Each is a rare event (a call that succeeds counts nothing), so the series are plain counters every loop's
/// connections share.
package final class PostgresMetrics: Sendable {
    package let connects: CounterFamily
    package let losses: Counter
    package let failures: CounterFamily

    /// The families, registered in `registry` (a registry of its own, read by nobody, by default).
    package init(registry: MetricsRegistry = MetricsRegistry()) {
        connects = registry.counter(
            "appstore_gateway_postgres_connects_total",
            help: "PostgreSQL connection attempts, by outcome (connected, failed).", labelNames: ["outcome"])
        losses = registry.counter(
            "appstore_gateway_postgres_connections_lost_total",
            help: "Established PostgreSQL connections that broke (each is then replaced with backoff)."
        ).labels()
        failures = registry.counter(
            "appstore_gateway_postgres_failures_total",
            help:
                "Failed PostgreSQL calls, by kind (server, connection_lost, not_connected, timeout, cancelled, "
                + "result_too_large, …).",
            labelNames: ["kind"])
        for outcome in ["connected", "failed"] { _ = connects.labels(outcome) }
    }

    func connected() { connects.labels("connected").increment() }
    func attemptFailed() { connects.labels("failed").increment() }
    func lost() { losses.increment() }
    func failed(_ error: PostgresError) { failures.labels(error.kind.rawValue).increment() }
}
