import Dispatch
import Testing

@testable import Metrics

/// Counters and gauges: steps of one (atomic adds) and other amounts (a locked base) make one value, under
/// concurrent use too.
@Suite struct CounterGaugeTests {
    @Test func aCounterAddsOnesAndAmounts() {
        let counter = Counter()
        #expect(counter.current == 0)
        counter.increment()
        counter.increment(by: 2.5)
        counter.increment()
        #expect(counter.current == 4.5)
    }

    @Test func aCounterFollowsARunningTotalUpOnly() {
        let counter = Counter()
        counter.follow(total: 3)
        #expect(counter.current == 3)
        counter.follow(total: 7)
        #expect(counter.current == 7)
        counter.follow(total: 5)  // a total that went back (a restarted source) never lowers a counter
        #expect(counter.current == 7)
    }

    @Test func concurrentOnesAllCount() {
        let counter = Counter()
        let gauge = Gauge()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for _ in 0..<10_000 {
                counter.increment()
                gauge.increment()
                if worker.isMultiple(of: 2) { gauge.decrement() }
            }
            counter.increment(by: 0.5)
        }
        #expect(counter.current == 80_004)
        #expect(gauge.current == 40_000)
    }

    @Test func setIsTheValueWhateverTheStepsBefore() {
        let gauge = Gauge()
        gauge.increment()
        gauge.increment()
        gauge.decrement(by: 0.25)
        #expect(gauge.current == 1.75)
        gauge.set(10)
        #expect(gauge.current == 10)
        gauge.decrement()
        gauge.increment(by: 0.5)
        #expect(gauge.current == 9.5)
        gauge.set(-3)
        #expect(gauge.current == -3)
    }

    /// Per-loop cells: each thread counts into its own, the series' value sums them with its own counts.
    @Test func cellsOfThreadsSumIntoTheirSeries() {
        let counter = Counter()
        let gauge = Gauge()
        let histogram = Histogram(upperBounds: [0.01, 1])
        let cells = (0..<4).map { _ in (counter.cell(), gauge.cell(), histogram.cell()) }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let (count, step, observe) = cells[worker]
            for index in 0..<10_000 {
                count.increment()
                step.increment()
                if index.isMultiple(of: 2) { step.decrement() }
                observe.observe(index.isMultiple(of: 4) ? 0.5 : 0.001)
            }
        }
        counter.increment()
        gauge.increment(by: 0.5)
        histogram.observe(2)
        #expect(counter.current == 40_001)
        #expect(gauge.current == 20_000.5)
        let snapshot = histogram.snapshot
        #expect(snapshot.bucketCounts == [30_000, 10_000, 1])
        #expect(snapshot.count == 40_001)
        #expect(abs(snapshot.sum - (10_000 * 0.5 + 30_000 * 0.001 + 2)) < 1e-6)
        // Setting a gauge accounts for the steps its cells took.
        gauge.set(3)
        cells[0].1.increment()
        #expect(gauge.current == 4)
    }
}
