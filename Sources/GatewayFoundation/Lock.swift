import Synchronization

#if DEBUG
    import CThreadSanitizer
#endif

/// The lock for every piece of state shared between threads: `Synchronization.Mutex` with the same API, that
/// ThreadSanitizer understands.
///
/// On Linux `Mutex` takes a contended lock in the kernel (`FUTEX_LOCK_PI`), where ThreadSanitizer cannot see it,
/// so state touched only inside `Mutex.withLock` from two threads is reported as a race. In debug builds this
/// lock tells ThreadSanitizer about each acquire and release (weak hooks, no-ops unless its runtime is linked
/// in, see `CThreadSanitizer`); in release builds it is `Mutex`, inlined the same way.
public struct Lock<Value: ~Copyable>: ~Copyable, Sendable {
    @usableFromInline
    let mutex: Mutex<Value>

    /// A lock guarding `initialValue`.
    @_alwaysEmitIntoClient
    @_transparent
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value, holding the lock.
    @_alwaysEmitIntoClient
    @_transparent
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if DEBUG
            // The mutex's own address is the synchronization object: taking the value's would be an access to it
            // before the acquire, which ThreadSanitizer reports.
            let address = withUnsafePointer(to: mutex) { UnsafeMutableRawPointer(mutating: $0) }
            return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
                gateway_tsan_acquire(address)
                defer { gateway_tsan_release(address) }
                return try body(&value)
            }
        #else
            return try mutex.withLock(body)
        #endif
    }
}
