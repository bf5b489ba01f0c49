import GatewayFoundation
import Synchronization

/// One gauge time series: a value that goes up and down.
///
/// Its value is a base plus a count of steps. Stepping by one (the calls and streams in flight, on every call)
/// is a single atomic add to the count; setting it or adding other amounts changes the base under a lock.
/// `set` makes the base whatever cancels the steps counted so far, so a step counts as before or after it.
///
/// A loop stepping it on every call steps its own `StepCell` instead: no two loops touch the same memory for it.
public final class Gauge: Sendable {
    private let steps = Atomic<Int64>(0)
    private let base = Lock<Double>(0)
    /// Per-thread parts (`StepCell`), summed on reading.
    private let cells = StepCells()

    init() {}

    /// A new cell of this gauge, for one thread's steps.
    public func cell() -> StepCell { cells.make() }

    /// The steps counted so far, in this gauge and its cells.
    private var stepped: Int64 { steps.load(ordering: .relaxed) &+ cells.total }

    /// Sets the value.
    public func set(_ newValue: Double) {
        base.withLock { $0 = newValue - Double(stepped) }
    }

    /// Adds 1.
    public func increment() { steps.wrappingAdd(1, ordering: .relaxed) }

    /// Subtracts 1.
    public func decrement() { steps.wrappingSubtract(1, ordering: .relaxed) }

    /// Adds `amount`.
    public func increment(by amount: Double) { base.withLock { $0 += amount } }

    /// Subtracts `amount`.
    public func decrement(by amount: Double) { base.withLock { $0 -= amount } }

    /// The current value.
    public var current: Double { base.withLock { $0 + Double(stepped) } }
}

/// A gauge metric with a fixed set of label names; `labels(...)` picks one time series.
public final class GaugeFamily: RegisteredFamily {
    /// The metric name.
    public let name: String
    /// The HELP text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    private let children = MetricChildren<Gauge>()

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        if labelNames.isEmpty { _ = children.child(for: []) { Gauge() } }
    }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: String...) -> Gauge { labels(values) }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: [String]) -> Gauge {
        checkLabelValues(values, names: labelNames, metric: name)
        return children.child(for: values) { Gauge() }
    }

    /// Sets the unlabelled series.
    public func set(_ value: Double) { labels([]).set(value) }

    /// Every time series made so far with its label values, sorted by label values (what a scrape reads).
    public var series: [(labelValues: [String], gauge: Gauge)] {
        children.sorted().map { (labelValues: $0.values, gauge: $0.child) }
    }

    var family: MetricFamily { .gauge(self) }
    static func registered(as family: MetricFamily) -> GaugeFamily? {
        if case .gauge(let gauge) = family { gauge } else { nil }
    }
}
