import GatewayFoundation

/// The process's metrics, rendered for Prometheus by the admin server's `/metrics`.
///
/// Families are created once (usually at startup) and their children kept by the code that updates them,
/// so the hot path is one lock-protected add on that child's own lock: no registry or family lock is taken.
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `render()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let families = Lock<[any RenderableMetricFamily]>([])

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

    /// Every family in registration order, in the text exposition format 0.0.4.
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var output = ""
        for family in snapshot {
            output += "# HELP \(family.name) \(PrometheusTextFormat.escapeHelp(family.help))\n"
            output += "# TYPE \(family.name) \(family.typeName)\n"
            family.renderSamples(into: &output)
        }
        return output
    }

    private func register<Family: RenderableMetricFamily>(
        name: String, labelNames: [String], make: () -> Family
    ) -> Family {
        // Invalid names are programming errors in the gateway, never input from the network.
        precondition(PrometheusTextFormat.isValidMetricName(name), "invalid metric name '\(name)'")
        for label in labelNames {
            precondition(PrometheusTextFormat.isValidLabelName(label), "metric \(name): invalid label name '\(label)'")
        }
        precondition(Set(labelNames).count == labelNames.count, "metric \(name): repeated label name")
        return families.withLock { list in
            if let existing = list.first(where: { $0.name == name }) {
                guard let same = existing as? Family, same.labelNames == labelNames else {
                    preconditionFailure("metric \(name) is already registered as another type or with other labels")
                }
                return same
            }
            let family = make()
            list.append(family)
            return family
        }
    }
}
