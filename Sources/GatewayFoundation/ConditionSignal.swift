#if canImport(Glibc)
    import Glibc
#endif

/// Wakes the threads that wait for a state to change — a server to hold no connection
/// (`HTTP2Server.waitUntilIdle`), a gRPC server to be asked to shut down (`GRPCServer.serve`) — so a shutdown
/// waits on that event, never on a poll interval. Whoever changes the state calls `signal()` after the change.
///
/// A condition variable on the monotonic clock (the one `MonotonicInstant` reads), so a deadline is not moved
/// by a change of the wall clock. For a server's life only: nothing on a call's path touches it.
public final class ConditionSignal: @unchecked Sendable {
    // Allocated once, never moved (a pthread object may not be), freed in deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Waits until `busy` is false or `deadline` passes; returns `!busy()` as last read. `busy` is read under
    /// the signal's lock, and whoever makes it false calls `signal()` afterwards: no wake-up is lost between
    /// the read and the wait.
    public func wait(until deadline: MonotonicInstant, while busy: () -> Bool) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var limit = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        while busy() {
            // ETIMEDOUT ends the wait; 0 (signalled, or woken spuriously) reads `busy` again.
            if pthread_cond_timedwait(condition, mutex, &limit) == ETIMEDOUT { return !busy() }
        }
        return true
    }

    /// Runs `body` under the signal's lock: the state a waiter's `busy` reads is changed here (then `signal()`).
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Wakes every waiter, to read its condition again.
    public func signal() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }
}
