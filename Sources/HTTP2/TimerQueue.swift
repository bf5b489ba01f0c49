/// A min-heap of deadlines on the monotonic clock, owned by one event loop.
///
/// Cancelling releases the payload at once and leaves its heap entry to be dropped when it reaches the top,
/// so scheduling is O(log n), cancelling O(1), and a cancelled timer never fires nor keeps its payload alive.
struct TimerQueue<Payload> {
    /// Identifies a scheduled timer so it can be cancelled.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var live: [UInt64: Payload] = [:]
    private var nextID: UInt64 = 1

    /// The number of timers that will still fire.
    var count: Int { live.count }

    /// Schedules `payload` to be due at `deadline` (monotonic nanoseconds).
    @discardableResult
    mutating func schedule(at deadline: UInt64, _ payload: Payload) -> ID {
        let id = nextID
        nextID &+= 1
        live[id] = payload
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return ID(value: id)
    }

    /// Cancels a timer; cancelling one that fired or was cancelled already does nothing.
    mutating func cancel(_ id: ID) {
        live[id.value] = nil
    }

    /// The earliest deadline of a live timer, if any.
    mutating func nextDeadline() -> UInt64? {
        dropCancelledTop()
        return heap.first?.deadline
    }

    /// Removes and returns every live timer due at or before `now`, earliest first.
    mutating func popDue(now: UInt64) -> [Payload] {
        var due: [Payload] = []
        while true {
            dropCancelledTop()
            guard let top = heap.first, top.deadline <= now else { return due }
            _ = removeTop()
            if let payload = live.removeValue(forKey: top.id) { due.append(payload) }
        }
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, live[top.id] == nil {
            _ = removeTop()
        }
    }

    private mutating func removeTop() -> Entry {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
        return top
    }

    private func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard before(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && before(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count && before(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
