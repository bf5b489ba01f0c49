/// A FIFO of bytes: appended at the back, consumed from the front without moving what remains, and
/// compacted only when the consumed prefix is both large and most of the storage, so a peer that always
/// leaves a little behind cannot make it grow forever. One type for every buffer of the I/O path.
public struct ByteQueue: Sendable {
    private var storage: [UInt8] = []
    private var start = 0
    /// True while `storage` is an array handed in whole (`append(_: [UInt8])` into an empty queue), which its
    /// giver may still share: drained, it is let go rather than emptied in place, which for a shared array
    /// would allocate a fresh buffer of the same capacity.
    private var adopted = false
    /// Storage larger than this is released, not kept, once the queue drains.
    private let keptCapacity: Int

    /// An empty queue that keeps up to `keptCapacity` bytes of storage for reuse when it drains.
    public init(keptCapacity: Int = 64 * 1024) {
        self.keptCapacity = keptCapacity
    }

    /// Bytes queued.
    public var count: Int { storage.count - start }

    /// Bytes held in storage, consumed or not (what compaction bounds).
    var storedBytes: Int { storage.count }

    /// True when nothing is queued.
    public var isEmpty: Bool { start == storage.count }

    /// Queues `bytes`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        adopted = false
        storage.append(contentsOf: bytes)
    }

    /// Queues `bytes`; into empty storage this takes the array itself, without a copy.
    public mutating func append(_ bytes: [UInt8]) {
        if isEmpty {
            storage = bytes  // consume() left start at 0
            adopted = true
        } else {
            adopted = false
            storage.append(contentsOf: bytes)
        }
    }

    /// Lets `body` append bytes in place at the back (e.g. a frame encoded straight into the queue).
    public mutating func append(_ body: (inout [UInt8]) throws -> Void) rethrows {
        adopted = false
        try body(&storage)
    }

    /// The byte `offset` bytes from the front; `offset` must be below `count`.
    public subscript(offset: Int) -> UInt8 { storage[start + offset] }

    /// Calls `body` with the queued bytes, front first.
    public func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start...])) }
    }

    /// Copies the `count` bytes after the first `offset` into a new array.
    public func copy(offset: Int, count: Int) -> [UInt8] {
        Array(storage[(start + offset)..<(start + offset + count)])
    }

    /// Copies up to `capacity` bytes from the front into `buffer` and consumes them; returns the count.
    public mutating func take(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let taken = min(max(0, capacity), count)
        if taken > 0 {
            withBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: taken) }
            consume(taken)
        }
        return taken
    }

    /// Moves `count` bytes (at most `self.count`) from the front to the back of `other`, with one copy;
    /// returns the count moved.
    @discardableResult
    public mutating func move(_ count: Int, to other: inout ByteQueue) -> Int {
        let moved = min(max(0, count), self.count)
        if moved > 0 {
            withBytes { other.append(UnsafeRawBufferPointer(rebasing: $0[..<moved])) }
            consume(moved)
        }
        return moved
    }

    /// Drops `n` bytes (at most `count`) from the front.
    public mutating func consume(_ n: Int) {
        start += min(max(0, n), count)
        if start == storage.count {
            if adopted {
                storage = []
                adopted = false
            } else {
                storage.removeAll(keepingCapacity: storage.capacity <= keptCapacity)
            }
            start = 0
        } else if start > 64 * 1024 && start * 2 > storage.count {
            storage.removeFirst(start)
            adopted = false  // a copy of its own now, if it was shared
            start = 0
        }
    }

    /// Drops everything.
    public mutating func removeAll() { consume(count) }
}
