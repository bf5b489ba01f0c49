#if canImport(Glibc)
    import Glibc
#endif

/// An event loop as code outside the transport sees it: descriptors watched for readiness, timers, work handed
/// over from other threads, and values kept per loop. The transport's `EventLoop` is one; a client library (the
/// upstream HTTP client) uses it to drive its sockets on the loop its caller already runs on, so a call that
/// waits for a remote answer never leaves its thread, without that library knowing the transport.
///
/// It is the one API of a loop: each operation has one name, and the transport uses the same ones (its loop adds
/// only what a connection needs on top: raw epoll registrations, timer targets, end-of-iteration work). `execute`
/// is safe from any thread; everything else is for the loop's own thread only (where `IOLoops.current` returns it).
public protocol IOLoop: AnyObject, Sendable {
    /// Runs `work` on the loop's thread soon, after the work handed over before it; false (and `work` let go
    /// without running) once the loop stopped.
    @discardableResult
    func execute(_ work: @escaping @Sendable () -> Void) -> Bool

    /// Calls `onReady` on the loop whenever `fd` is ready for what `interest` names, until `unwatch`; a second
    /// call for a watched descriptor changes its interest (and handler). `owner` (held by identity only) is who
    /// may end the watch: a late `unwatch` from another owner of a descriptor number since reused does nothing.
    /// False when the kernel refused, or the descriptor is one of the loop's own.
    func watch(fd: Int32, interest: IOInterest, owner: AnyObject, _ onReady: @escaping (IOReadiness) -> Void) -> Bool
    /// Stops `owner`'s watch of `fd` (harmless when there is none). Call before closing it.
    func unwatch(fd: Int32, owner: AnyObject)

    /// Runs `body` on the loop after `delay` (at the next iteration for zero), unless cancelled first.
    @discardableResult
    func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> IOLoopTimer
    /// Cancels a timer; harmless when it fired already.
    func cancelTimer(_ timer: IOLoopTimer)

    /// The value kept for `key` on this loop, if any. Values are let go when the loop stops.
    func loopLocal(_ key: ObjectIdentifier) -> AnyObject?
    /// Keeps `value` for `key` on this loop (nil forgets it).
    func setLoopLocal(_ key: ObjectIdentifier, _ value: AnyObject?)
}

/// What a watched descriptor is waited on for.
public struct IOInterest: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let readable = IOInterest(rawValue: 1)
    public static let writable = IOInterest(rawValue: 2)
}

/// What a watched descriptor is ready for (`failed`: an error or hang-up is pending on it).
public struct IOReadiness: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let readable = IOReadiness(rawValue: 1)
    public static let writable = IOReadiness(rawValue: 2)
    public static let failed = IOReadiness(rawValue: 4)
}

/// A timer scheduled on a loop, for cancelling it: the loop's own numbers for it (the one timer handle type, for
/// the transport's timers too).
public struct IOLoopTimer: Sendable, Hashable {
    public let slot: Int
    public let generation: UInt32

    @inlinable
    public init(slot: Int, generation: UInt32) {
        self.slot = slot
        self.generation = generation
    }
}

/// The loop the calling thread runs, if any.
public enum IOLoops {
    /// The loop running on this thread (set by the loop for as long as it runs), nil on any other thread.
    public static var current: (any IOLoop)? {
        guard let slot = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<IOLoopSlot>.fromOpaque(slot).takeUnretainedValue().loop
    }

    /// Makes `slot`'s loop the current one of this thread (nil: none). The caller keeps `slot` alive meanwhile.
    public static func setCurrent(_ slot: IOLoopSlot?) {
        _ = pthread_setspecific(currentLoopKey, slot.map { Unmanaged.passUnretained($0).toOpaque() })
    }
}

/// A loop, held where a thread-local pointer can reach it (an existential cannot be stored there as is).
public final class IOLoopSlot: Sendable {
    public let loop: any IOLoop
    public init(_ loop: any IOLoop) { self.loop = loop }
}

private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key, nil)
    precondition(rc == 0, "pthread_key_create failed: \(rc)")
    return key
}()
