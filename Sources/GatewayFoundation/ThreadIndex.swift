internal import CLinux

/// A small number per thread, in the order threads first ask (0, 1, 2, …): for state kept once per thread
/// in a fixed array (`PerThread`), so threads working side by side touch no memory another writes.
public enum ThreadIndex {
    /// The calling thread's number (a thread-local read after its first call).
    public static var current: Int { Int(clinux_thread_index()) }
}

/// `count` instances of `Value`, each used by the threads whose `ThreadIndex` falls on it: with at most
/// `count` threads using it, each thread has one of its own (no memory written by two threads); beyond that,
/// threads share, so `Value` must still be safe to share (`Sendable`). Made up front: no lock to find one.
public final class PerThread<Value: AnyObject & Sendable>: @unchecked Sendable {
    /// Owned here (initialized in `init`, never written again, deinitialized in `deinit`): a buffer rather than
    /// an array, so finding a thread's value retains no storage every thread reads.
    private let values: UnsafeMutableBufferPointer<Value>

    /// `count` values (at least one), each made by `make`.
    public init(count: Int, _ make: () -> Value) {
        values = .allocate(capacity: max(1, count))
        for index in values.indices { (values.baseAddress! + index).initialize(to: make()) }
    }

    deinit {
        values.baseAddress!.deinitialize(count: values.count)
        values.deallocate()
    }

    /// The calling thread's value.
    public var current: Value { values[ThreadIndex.current % values.count] }
}
