import GatewayFoundation

/// One histogram time series: observations counted into fixed buckets, plus their sum and count.
public final class Histogram: Sendable {
    /// A consistent reading of a histogram.
    public struct Snapshot: Sendable, Equatable {
        /// Upper bounds, ascending, without +Inf.
        public var upperBounds: [Double]
        /// Observations per bucket, *not* cumulative; one more entry than `upperBounds` (the +Inf bucket).
        public var bucketCounts: [UInt64]
        /// Sum of all observations.
        public var sum: Double
        /// Number of observations.
        public var count: UInt64
    }

    /// Counts under a lock: the series' own, or one `Cell`'s.
    fileprivate struct State {
        var bucketCounts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        init(buckets: Int) { bucketCounts = Array(repeating: 0, count: buckets) }

        mutating func add(_ value: Double, at index: Int) {
            bucketCounts[index] += 1
            sum += value
            count += 1
        }

        mutating func add(_ other: State) {
            for index in bucketCounts.indices { bucketCounts[index] += other.bucketCounts[index] }
            sum += other.sum
            count += other.count
        }
    }

    private let upperBounds: [Double]
    private let state: Lock<State>
    /// The cells handed out, summed on reading; the lock is never taken by an observation.
    private let cells = Lock<[Cell]>([])

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        state = Lock(State(buckets: upperBounds.count + 1))
    }

    /// A part of this histogram that one thread alone observes into (an event loop's): its lock is that
    /// thread's alone but for a scrape reading it, so no two loops contend for one lock or cache line.
    public final class Cell: Sendable {
        private let upperBounds: [Double]
        fileprivate let state: Lock<State>
        /// Keeps the next object's fields off this cell's cache line.
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

        fileprivate init(upperBounds: [Double]) {
            self.upperBounds = upperBounds
            state = Lock(State(buckets: upperBounds.count + 1))
        }

        /// Records one observation (for durations, in seconds).
        public func observe(_ value: Double) {
            let index = Histogram.bucket(of: value, in: upperBounds)
            state.withLock { $0.add(value, at: index) }
        }
    }

    /// A new cell of this histogram, for one thread's observations.
    public func cell() -> Cell {
        let cell = Cell(upperBounds: upperBounds)
        cells.withLock { $0.append(cell) }
        return cell
    }

    /// The bucket of `value`: the first bound >= value (`le` is inclusive), the +Inf bucket for NaN.
    fileprivate static func bucket(of value: Double, in upperBounds: [Double]) -> Int {
        var low = 0
        var high = upperBounds.count
        while low < high {
            let mid = (low + high) / 2
            if upperBounds[mid] >= value { high = mid } else { low = mid + 1 }
        }
        return value.isNaN ? upperBounds.count : low
    }

    /// Records one observation (for durations, in seconds).
    public func observe(_ value: Double) {
        // The bucket is found outside the lock.
        let index = Self.bucket(of: value, in: upperBounds)
        state.withLock { $0.add(value, at: index) }
    }

    /// Records a duration in seconds.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// The current counts, the cells' included.
    public var snapshot: Snapshot {
        var total = state.withLock { $0 }
        for cell in cells.withLock({ $0 }) { total.add(cell.state.withLock { $0 }) }
        return Snapshot(upperBounds: upperBounds, bucketCounts: total.bucketCounts, sum: total.sum, count: total.count)
    }
}

/// A histogram metric with a fixed set of label names and bucket bounds.
public final class HistogramFamily: RegisteredFamily {
    /// Prometheus client libraries' default bounds, in seconds: 5 ms to 10 s.
    public static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// The metric name.
    public let name: String
    /// The HELP text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    /// The finite upper bounds, ascending.
    public let upperBounds: [Double]
    private let children = MetricChildren<Histogram>()

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        let bounds = buckets.filter { $0 != .infinity }
        precondition(!bounds.contains(where: \.isNaN), "histogram \(name): NaN bucket bound")
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram \(name): bounds must ascend")
        precondition(!labelNames.contains("le"), "histogram \(name): `le` is reserved for buckets")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.upperBounds = bounds
        if labelNames.isEmpty { _ = children.child(for: []) { Histogram(upperBounds: bounds) } }
    }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: String...) -> Histogram { labels(values) }

    /// The time series for these label values (one per label name, in order).
    public func labels(_ values: [String]) -> Histogram {
        checkLabelValues(values, names: labelNames, metric: name)
        return children.child(for: values) { Histogram(upperBounds: upperBounds) }
    }

    /// Records an observation in the unlabelled series.
    public func observe(_ value: Double) { labels([]).observe(value) }

    /// Every time series made so far with its label values, sorted by label values (what a scrape reads).
    public var series: [(labelValues: [String], histogram: Histogram)] {
        children.sorted().map { (labelValues: $0.values, histogram: $0.child) }
    }

    var family: MetricFamily { .histogram(self) }
    static func registered(as family: MetricFamily) -> HistogramFamily? {
        if case .histogram(let histogram) = family { histogram } else { nil }
    }
}
