import GatewayFoundation

/// What the registry needs from each family: its name and its rendering.
protocol RenderableMetricFamily: AnyObject, Sendable {
    var name: String { get }
    var help: String { get }
    var typeName: String { get }
    var labelNames: [String] { get }
    /// Appends the sample lines (not the HELP/TYPE header).
    func renderSamples(into output: inout String)
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
