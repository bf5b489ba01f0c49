import GatewayFoundation
import Testing
import Tracing

/// The export queue: bounded (drops counted), batches when full or after the delay, everything on a flush.
@Suite struct SpanQueueTests {
    func span(_ id: UInt64) -> SpanRecord {
        SpanRecord(
            traceIDHigh: 1, traceIDLow: 1, spanID: id, parentSpanID: 0, parentIsRemote: false, traceFlags: 1,
            name: "s", kind: .internal, startUnixNanos: 1)
    }
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    @Test func aFullQueueDropsAndCounts() {
        var queue = SpanQueue(capacity: 3, batchSize: 2, delay: .seconds(5))
        let accepted = (1...5).map { queue.offer(span($0), now: start) }
        #expect(accepted == [true, true, true, false, false])
        #expect(queue.dropped == 2 && queue.count == 3)
    }

    @Test func aBatchIsDueWhenFullOrAfterTheDelay() {
        var queue = SpanQueue(capacity: 10, batchSize: 3, delay: .seconds(5))
        #expect(queue.dueAt == nil && queue.takeBatch(now: start).isEmpty)
        _ = queue.offer(span(1), now: start)
        _ = queue.offer(span(2), now: start + .seconds(1))
        #expect(queue.dueAt == start + .seconds(5))
        #expect(!queue.isDue(now: start + .seconds(4)) && queue.takeBatch(now: start + .seconds(4)).isEmpty)
        #expect(queue.takeBatch(now: start + .seconds(5)).map(\.spanID) == [1, 2])
        #expect(queue.count == 0 && queue.dueAt == nil)

        for id in 3...9 { _ = queue.offer(span(UInt64(id)), now: start + .seconds(6)) }
        // Full batches go at once, oldest first; the rest waits for its delay.
        #expect(queue.takeBatch(now: start + .seconds(6)).map(\.spanID) == [3, 4, 5])
        #expect(queue.takeBatch(now: start + .seconds(6)).map(\.spanID) == [6, 7, 8])
        #expect(queue.takeBatch(now: start + .seconds(6)).isEmpty)
        #expect(queue.takeBatch(now: start + .seconds(6), flushing: true).map(\.spanID) == [9])
    }

    @Test func theQueueKeepsItsOrderAndBoundAcrossManyBatches() {
        var queue = SpanQueue(capacity: 4, batchSize: 1, delay: .zero)
        var taken: [UInt64] = []
        for id in 1...100 {
            let accepted = queue.offer(span(UInt64(id)), now: start)
            #expect(accepted)
            // One taken for every two offered until the queue is near full, then drained one at a time.
            if id % 2 == 0 || queue.count == queue.capacity { taken += queue.takeBatch(now: start).map(\.spanID) }
        }
        while queue.count > 0 { taken += queue.takeBatch(now: start).map(\.spanID) }
        #expect(taken == (1...100).map { UInt64($0) } && queue.dropped == 0)
    }

    @Test func discardingAllReportsWhatWasLeft() {
        var queue = SpanQueue(capacity: 8, batchSize: 8, delay: .seconds(1))
        for id in 1...5 { _ = queue.offer(span(UInt64(id)), now: start) }
        #expect(queue.discardAll() == 5 && queue.count == 0)
    }

    @Test func theBatchIsNeverLargerThanTheQueue() {
        let queue = SpanQueue(capacity: 2, batchSize: 512, delay: .seconds(1))
        #expect(queue.batchSize == 2)
    }
}
