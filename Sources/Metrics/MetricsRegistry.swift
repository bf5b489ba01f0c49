import GatewayFoundation

/// The process's metrics: every layer registers its families here by name and help and records into them
/// directly; an exposition (Observability's Prometheus text for the admin server's `/metrics`) reads them.
///
/// Families are created once (usually at startup) and their children kept by the code that updates them,
/// so the hot path is one lock-protected add on that child's own lock, or a store to a loop's own cell: no
/// registry or family lock is taken.
public final class MetricsRegistry: Sendable {
    private let registered = Lock<[MetricFamily]>([])

    /// An empty registry.
    public init() {}

    /// The counter family `name`, created on first call; later calls with the same name return it.
    public func counter(_ name: String, help: String, labelNames: [String] = []) -> CounterFamily {
        register(name: name, labelNames: labelNames) { CounterFamily(name: name, help: help, labelNames: labelNames) }
    }

    /// The gauge family `name`, created on first call; later calls with the same name return it.
    public func gauge(_ name: String, help: String, labelNames: [String] = []) -> GaugeFamily {
        register(name: name, labelNames: labelNames) { GaugeFamily(name: name, help: help, labelNames: labelNames) }
    }

    /// The histogram family `name` with finite upper `buckets` (ascending; +Inf is implied).
    public func histogram(
        _ name: String, help: String, labelNames: [String] = [],
        buckets: [Double] = HistogramFamily.defaultBuckets
    ) -> HistogramFamily {
        register(name: name, labelNames: labelNames) {
            HistogramFamily(name: name, help: help, labelNames: labelNames, buckets: buckets)
        }
    }

    /// Every family, in registration order.
    public var families: [MetricFamily] { registered.withLock { $0 } }

    private func register<Family: RegisteredFamily>(
        name: String, labelNames: [String], make: () -> Family
    ) -> Family {
        // Invalid names are programming errors in the gateway, never input from the network.
        precondition(MetricNames.isValidMetricName(name), "invalid metric name '\(name)'")
        for label in labelNames {
            precondition(MetricNames.isValidLabelName(label), "metric \(name): invalid label name '\(label)'")
        }
        precondition(Set(labelNames).count == labelNames.count, "metric \(name): repeated label name")
        return registered.withLock { list in
            if let existing = list.first(where: { $0.name == name }) {
                guard let same = Family.registered(as: existing), same.labelNames == labelNames else {
                    preconditionFailure("metric \(name) is already registered as another type or with other labels")
                }
                return same
            }
            let family = make()
            list.append(family.family)
            return family
        }
    }
}
