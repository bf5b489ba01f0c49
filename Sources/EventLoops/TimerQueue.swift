import GatewayFoundation

/// A min-heap of deadlines on the monotonic clock, owned by one event loop.
///
/// Payloads live in a slot table (reused through a free list, each slot with a generation so a stale id
/// is harmless); the heap holds deadlines pointing at slots. Cancelling frees the slot and releases the
/// payload at once and leaves the heap entry behind; once dead entries outnumber live ones the heap is
/// rebuilt without them. So scheduling is O(log n), cancelling O(1) amortized, no hashing, and a call
/// that cancels its 120 s deadline a microsecond later leaves nothing behind for long: the heap stays
/// within twice the live timers (at 100,000 calls a second it used to keep 12 million dead entries).
package struct TimerQueue<Payload> {
    /// Identifies a scheduled timer so it can be cancelled: its slot and the slot's generation (GatewayFoundation's
    /// `IOLoopTimer`, the same two numbers other modules hold).
    package typealias ID = IOLoopTimer

    private struct Entry {
        var deadline: MonotonicInstant
        var sequence: UInt64
        var slot: Int
        var generation: UInt32
    }

    private struct Slot {
        var payload: Payload?
        var generation: UInt32 = 0
    }

    private var heap: [Entry] = []
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var nextSequence: UInt64 = 0
    private var live = 0

    /// The number of timers that will still fire.
    var count: Int { live }

    /// Heap entries, dead ones included (for tests: it stays within twice `count`, plus a small floor).
    var storedEntries: Int { heap.count }

    /// Schedules `payload` to be due at `deadline`.
    @discardableResult
    mutating func schedule(at deadline: MonotonicInstant, _ payload: Payload) -> ID {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot].payload = payload
        } else {
            slot = slots.count
            slots.append(Slot(payload: payload))
        }
        let generation = slots[slot].generation
        heap.append(Entry(deadline: deadline, sequence: nextSequence, slot: slot, generation: generation))
        nextSequence &+= 1
        live += 1
        siftUp(heap.count - 1)
        return ID(slot: slot, generation: generation)
    }

    /// Cancels a timer; cancelling one that fired or was cancelled already does nothing.
    mutating func cancel(_ id: ID) {
        guard id.slot < slots.count, slots[id.slot].generation == id.generation, slots[id.slot].payload != nil
        else { return }
        _ = release(slot: id.slot)
        if heap.count > 64 && heap.count > 2 * live { compact() }
    }

    /// The earliest deadline of a live timer, if any.
    mutating func nextDeadline() -> MonotonicInstant? {
        dropDeadTop()
        return heap.first?.deadline
    }

    /// Where the timers scheduled so far end: `popNextDue(now:scheduledBefore:)` given this fires none
    /// scheduled after it was read.
    var mark: UInt64 { nextSequence }

    /// Removes and returns the earliest live timer due at or before `now` among those scheduled before
    /// `mark`; nil when the earliest due one is not. One at a time, so that a timer cancelled by what an
    /// earlier one did (a connection closed by a call's deadline, its own housekeeping due in the same pass)
    /// never fires, and a timer scheduled while the due ones run waits for the next pass.
    mutating func popNextDue(now: MonotonicInstant, scheduledBefore mark: UInt64) -> Payload? {
        while true {
            dropDeadTop()
            guard let top = heap.first, top.deadline <= now, top.sequence < mark else { return nil }
            removeTop()
            if let payload = release(slot: top.slot) { return payload }
        }
    }

    /// Frees a live slot: its payload out, its generation on (stale ids and entries no longer match).
    private mutating func release(slot: Int) -> Payload? {
        let payload = slots[slot].payload
        slots[slot].payload = nil
        slots[slot].generation &+= 1
        freeSlots.append(slot)
        live -= 1
        return payload
    }

    private func isLive(_ entry: Entry) -> Bool {
        slots[entry.slot].generation == entry.generation && slots[entry.slot].payload != nil
    }

    private mutating func dropDeadTop() {
        while let top = heap.first, !isLive(top) { removeTop() }
    }

    /// Rebuilds the heap from its live entries (Floyd's bottom-up construction, O(n)).
    private mutating func compact() {
        let slots = self.slots
        heap.removeAll { slots[$0.slot].generation != $0.generation || slots[$0.slot].payload == nil }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
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
