import GatewayFoundation
import Synchronization

/// One counter time series: a value that only goes up (or resets with the process).
///
/// Counting one is a single atomic add; other amounts (seconds, deltas of a total read elsewhere) go to a
/// locked sum beside it. What every call counts goes to a `StepCell` of the loop that serves it instead: no
/// two loops touch the same memory for it.
public final class Counter: Sendable {
    private let ones = Atomic<UInt64>(0)
    private let amounts = Lock<Double>(0)
    /// Per-thread parts (`StepCell`), summed on reading.
    private let cells = StepCells()

    init() {}

    /// A new cell of this counter, for one thread's counts.
    public func cell() -> StepCell { cells.make() }

    /// Adds 1.
    public func increment() {
        ones.wrappingAdd(1, ordering: .relaxed)
    }

    /// Adds `amount`, which must not be negative.
    public func increment(by amount: Double) {
        precondition(amount >= 0, "a counter only goes up; use a gauge")
        amounts.withLock { $0 += amount }
    }

    /// Raises the counter to `total`, a running total kept elsewhere (a server's, a cache's, /proc's) and read at a
    /// scrape; never lowers it.
    public func follow(total: Double) {
        let step = total - current
        if step > 0 { increment(by: step) }
    }

    /// The current value.
    public var current: Double {
        let counted = ones.load(ordering: .relaxed) &+ UInt64(bitPattern: cells.total)
        return Double(counted) + amounts.withLock { $0 }
    }
}

/// A counter metric with a fixed set of label names; `labels(...)` picks one time series.
public final class CounterFamily: RegisteredFamily {
    /// The metric name.
    public let name: String
    /// The HELP text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    private let children = MetricChildren<Counter>()

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        // An unlabelled metric is exported as 0 from the start, so rate() has a first sample.
        if labelNames.isEmpty { _ = children.child(for: []) { Counter() } }
    }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: String...) -> Counter { labels(values) }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: [String]) -> Counter {
        checkLabelValues(values, names: labelNames, metric: name)
        return children.child(for: values) { Counter() }
    }

    /// Increments the unlabelled series.
    public func increment(by amount: Double = 1) { labels([]).increment(by: amount) }

    /// Every time series made so far with its label values, sorted by label values (what a scrape reads).
    public var series: [(labelValues: [String], counter: Counter)] {
        children.sorted().map { (labelValues: $0.values, counter: $0.child) }
    }

    var family: MetricFamily { .counter(self) }
    static func registered(as family: MetricFamily) -> CounterFamily? {
        if case .counter(let counter) = family { counter } else { nil }
    }
}
