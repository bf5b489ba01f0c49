import Dispatch
import Testing

@testable import Observability

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
}
