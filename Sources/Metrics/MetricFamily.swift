import GatewayFoundation

/// One registered metric family, as an exposition reads it (`MetricsRegistry.families`).
public enum MetricFamily: Sendable {
    case counter(CounterFamily)
    case gauge(GaugeFamily)
    case histogram(HistogramFamily)

    /// The metric name.
    public var name: String {
        switch self {
        case .counter(let family): family.name
        case .gauge(let family): family.name
        case .histogram(let family): family.name
        }
    }

    /// The HELP text.
    public var help: String {
        switch self {
        case .counter(let family): family.help
        case .gauge(let family): family.help
        case .histogram(let family): family.help
        }
    }

    /// The label names, in order.
    public var labelNames: [String] {
        switch self {
        case .counter(let family): family.labelNames
        case .gauge(let family): family.labelNames
        case .histogram(let family): family.labelNames
        }
    }
}

/// What the registry needs of each kind of family: to wrap it, and to find it again under its name.
protocol RegisteredFamily: AnyObject, Sendable {
    var labelNames: [String] { get }
    var family: MetricFamily { get }
    static func registered(as family: MetricFamily) -> Self?
}

/// The children of one family, one per label-value combination, created on first use.
/// The lookup takes the family lock; callers on a hot path keep the child and skip it.
final class MetricChildren<Child: Sendable>: Sendable {
    private let children = Lock<[[String]: Child]>([:])

    func child(for values: [String], make: () -> Child) -> Child {
        children.withLock { table in
            if let existing = table[values] { return existing }
            let created = make()
            table[values] = created
            return created
        }
    }

    /// Every child with its label values, sorted by label values so the output is stable.
    func sorted() -> [(values: [String], child: Child)] {
        let all = children.withLock { table in table.map { (values: $0.key, child: $0.value) } }
        return all.sorted { $0.values.lexicographicallyPrecedes($1.values) }
    }
}

func checkLabelValues(_ values: [String], names: [String], metric: String) {
    precondition(
        values.count == names.count,
        "metric \(metric) has labels \(names), got \(values.count) values")
}
