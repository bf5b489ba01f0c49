import GatewayFoundation

/// The ended spans waiting for export, as a pure state machine (time is passed in): at most `capacity` of
/// them (a span offered to a full queue is dropped and counted), taken in batches of up to `batchSize`
/// when a batch is full or the oldest span has waited `delay`, and all of them when flushing.
package struct SpanQueue: Sendable {
    /// The most spans held.
    package let capacity: Int
    /// The most spans per export.
    package let batchSize: Int
    /// The longest the oldest span waits for its batch to fill.
    package let delay: Duration
    private var spans: [SpanRecord] = []
    /// Where the oldest pending span is in `spans` (taken spans are removed lazily).
    private var head = 0
    /// When the oldest pending span arrived (nil: none pending).
    private var oldestSince: MonotonicInstant?
    /// Spans refused because the queue was full.
    package private(set) var dropped = 0

    /// A queue of `capacity` (at least 1) spans, exported `batchSize` (at least 1, at most `capacity`) at a time.
    package init(capacity: Int, batchSize: Int, delay: Duration) {
        self.capacity = max(1, capacity)
        self.batchSize = min(max(1, batchSize), self.capacity)
        self.delay = delay
    }

    /// Spans waiting.
    package var count: Int { spans.count - head }

    /// Queues `span` arriving `now`; false (and counted in `dropped`) when the queue is full.
    package mutating func offer(_ span: SpanRecord, now: MonotonicInstant) -> Bool {
        guard count < capacity else {
            dropped += 1
            return false
        }
        if count == 0 { oldestSince = now }
        spans.append(span)
        return true
    }

    /// Whether a batch is due `now`: a full one, or the oldest span has waited `delay`.
    package func isDue(now: MonotonicInstant) -> Bool {
        guard let oldestSince else { return false }
        return count >= batchSize || now - oldestSince >= delay
    }

    /// When the next batch falls due if nothing more arrives (nil: nothing pending).
    package var dueAt: MonotonicInstant? { oldestSince.map { $0 + delay } }

    /// The next batch: up to `batchSize` of the oldest spans when one is due `now` or `flushing`; else none.
    package mutating func takeBatch(now: MonotonicInstant, flushing: Bool = false) -> [SpanRecord] {
        guard count > 0, flushing || isDue(now: now) else { return [] }
        let end = head + min(batchSize, count)
        let batch = Array(spans[head..<end])
        head = end
        if head == spans.count {
            spans.removeAll(keepingCapacity: true)
            head = 0
            oldestSince = nil
        } else {
            // The rest waited since the batch's time at most: they go in the next period.
            oldestSince = now
            if head >= capacity {
                spans.removeFirst(head)
                head = 0
            }
        }
        return batch
    }

    /// Empties the queue, returning how many spans were in it (what a shutdown could not export).
    package mutating func discardAll() -> Int {
        let left = count
        spans.removeAll()
        head = 0
        oldestSince = nil
        return left
    }
}
