import GatewayFoundation
import Synchronization

/// One counter time series: a value that only goes up (or resets with the process).
///
/// Counting one is a single atomic add; other amounts (seconds, deltas of a total read elsewhere) go to a
/// locked sum beside it. What every call counts goes to a `Cell` of the loop that serves it instead: no
/// two loops touch the same memory for it.
public final class Counter: Sendable {
    private let ones = Atomic<UInt64>(0)
    private let amounts = Lock<Double>(0)
    /// The cells handed out, summed on reading (a scrape); the lock is never taken by a count.
    private let cells = Lock<[Cell]>([])

    init() {}

    /// A part of this counter that one thread alone counts into (an event loop's): counting is a plain
    /// load and store, no locked instruction, on a cache line no other cell shares; the counter's value
    /// sums its cells.
    public final class Cell: Sendable {
        private let value = Atomic<UInt64>(0)
        /// Keeps the next object's fields off this cell's cache line.
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

        init() {}

        /// Adds 1. Only ever from the one thread the cell belongs to.
        @inline(__always)
        public func increment() {
            value.store(value.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        }

        var current: UInt64 { withExtendedLifetime(padding) { value.load(ordering: .relaxed) } }
    }

    /// A new cell of this counter, for one thread's counts.
    public func cell() -> Cell {
        let cell = Cell()
        cells.withLock { $0.append(cell) }
        return cell
    }

    /// Adds 1.
    public func increment() {
        ones.wrappingAdd(1, ordering: .relaxed)
    }

    /// Adds `amount`, which must not be negative.
    public func increment(by amount: Double) {
        precondition(amount >= 0, "a counter only goes up; use a gauge")
        amounts.withLock { $0 += amount }
    }

    /// The current value.
    public var current: Double {
        let counted = cells.withLock { $0.reduce(ones.load(ordering: .relaxed)) { $0 &+ $1.current } }
        return Double(counted) + amounts.withLock { $0 }
    }
}

/// A counter metric with a fixed set of label names; `labels(...)` picks one time series.
public final class CounterFamily: RenderableMetricFamily {
    /// The metric name.
    public let name: String
    /// The HELP text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    let typeName = "counter"
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

    func renderSamples(into output: inout String) {
        for (values, counter) in children.sorted() {
            let labels = PrometheusTextFormat.labelSet(names: labelNames, values: values)
            output += "\(name)\(labels) \(PrometheusTextFormat.formatValue(counter.current))\n"
        }
    }
}
