import GatewayFoundation
import Synchronization

/// A part of a counter or gauge that one thread alone steps (an event loop's): a plain load and store, no
/// locked instruction, on a cache line no other cell shares; the series' value sums its cells on reading.
public final class StepCell: Sendable {
    @usableFromInline
    let value = Atomic<Int64>(0)
    /// Keeps the next object's fields off this cell's cache line.
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

    init() {}

    /// Adds 1. Only ever from the one thread the cell belongs to.
    @inlinable @inline(__always)
    public func increment() { value.store(value.load(ordering: .relaxed) &+ 1, ordering: .relaxed) }

    /// Subtracts 1. Only ever from the one thread the cell belongs to.
    @inlinable @inline(__always)
    public func decrement() { value.store(value.load(ordering: .relaxed) &- 1, ordering: .relaxed) }

    var current: Int64 { value.load(ordering: .relaxed) }
}

/// The cells a series handed out, summed on reading (a scrape); a step never takes the lock.
final class StepCells: Sendable {
    private let cells = Lock<[StepCell]>([])

    /// A new cell, for one thread's steps.
    func make() -> StepCell {
        let cell = StepCell()
        cells.withLock { $0.append(cell) }
        return cell
    }

    /// The sum of every cell's steps.
    var total: Int64 { cells.withLock { $0.reduce(0) { $0 &+ $1.current } } }
}
