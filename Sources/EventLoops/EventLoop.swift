internal import CLinux
import GatewayFoundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Something registered with an event loop for readiness events on a file descriptor.
package protocol EventSource: AnyObject {
    /// Called on the loop thread with the epoll event mask.
    func handle(events: UInt32)
}

/// Something with buffered output, flushed once at the end of an event-loop iteration.
/// What a loop timer does: a closure, or a call on an object that is its own timer (no closure context).
package enum TimerAction {
    case closure(() -> Void)
    case target(any TimerTarget)
}

/// An object a loop timer calls back (see `EventLoop.scheduleTimer(at:target:)`).
public protocol TimerTarget: AnyObject {
    /// The timer is due; called on the loop.
    func timerFired()
}

/// Something that asks its loop for one `iterationEnded()` after the current iteration's events, tasks and
/// timers (a connection's flush, a call's deadline timer), queued at most once at a time.
public protocol IterationEndTarget: AnyObject {
    /// Set by the loop while the target waits (so it is queued once).
    var iterationEndQueued: Bool { get set }
    func iterationEnded()
}

/// One epoll event loop on one thread. It owns its epoll descriptor, every source registered with it and
/// its timers; none of those is touched from another thread. Other threads hand work to it with
/// `execute(_:)`, which is the only thread-safe entry point (a queue plus an eventfd wake-up). Its API is
/// `IOLoop`'s, one name per operation, plus what only the transport needs (`watch` of an `EventSource` with
/// raw epoll events, timer targets, `atIterationEnd`).
///
/// It is also a Swift `TaskExecutor`: a task started with it as its executor preference (a gRPC call's
/// handler) runs its non-isolated code on the loop's thread, and wherever it is resumed from (another loop, a
/// pool) it comes back here in one hand-over, never through Swift's global pool.
public final class EventLoop: TaskExecutor, @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Lock<Inbox>(Inbox())
    private var sources: [Int32: any EventSource] = [:]
    private var timers = TimerQueue<TimerAction>()
    private var atIterationEndTargets: [any IterationEndTarget] = []
    /// Values kept for other modules (`IOLoop.setLoopLocal`), let go when the loop stops.
    private var locals: [ObjectIdentifier: AnyObject] = [:]
    /// Empty arrays (with their capacity) that `atIterationEndTargets` and the inbox's tasks trade places with.
    private var spareIterationEndTargets: [any IterationEndTarget] = []
    private var spareTasks: [Work] = []
    /// A burst's larger arrays are let go rather than kept as spares.
    private static let keptSpareCapacity = 1024
    private var running = false
    /// The running loop's thread (`pthread_self()` as a number), 0 before `run()` and after it returns: one
    /// relaxed load, compared with the caller's, is the whole confinement check (`inEventLoop`).
    private let threadID = Atomic<UInt>(0)
    /// A small number naming this loop in logs.
    public let index: Int

    /// What other threads (and Swift tasks) hand to the loop, run in the order handed over.
    private enum Work {
        case closure(@Sendable () -> Void)
        /// A Swift task's job: a task preferring this loop, resumed or started.
        case job(UnownedJob)
    }

    private struct Inbox {
        var tasks: [Work] = []
        var wakePending = false
        var stopRequested = false
        /// `run()` has returned: a task handed over now would never run, so it is let go at once.
        var stopped = false
    }

    package init(index: Int) throws(SystemError) {
        self.index = index
        epollFD = try systemCall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        do {
            wakeFD = try systemCall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        } catch {
            close(epollFD)
            throw error
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeFD
        if epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) != 0 {
            preconditionFailure("epoll_ctl(ADD) of a fresh eventfd failed: errno \(clinux_errno())")
        }
    }

    deinit {
        close(wakeFD)
        close(epollFD)
    }

    /// True when called on this loop's thread. Cheap enough for release builds: a thread only ever sees its
    /// own id stored here (it stored it), so a relaxed load suffices.
    @inline(__always)
    public var inEventLoop: Bool {
        threadID.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// True once `run()` has begun (and stays so after it returns): from then on only the loop's thread may
    /// take over values bound to it.
    var hasStarted: Bool { started.load(ordering: .acquiring) }
    private let started = Atomic<Bool>(false)

    /// Runs `task` on the loop thread soon. Safe from any thread. Once the loop has stopped, `task` is released
    /// without running (what it holds must not stay behind in a loop nobody runs) and the answer is false.
    @discardableResult
    public func execute(_ task: @escaping @Sendable () -> Void) -> Bool {
        hand(.closure(task))
    }

    /// Runs a job of a task that prefers this loop (`Task(executorPreference:)`), on the loop thread, soon.
    /// Once the loop has stopped, the job goes to Swift's global pool instead: a task must run to its end (what
    /// it then asks of the loop is let go, as for `execute`).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !hand(.job(job)) { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Queues `work`; false when the loop has stopped (nothing queued). From the loop's own thread there is no
    /// wake-up to write: the loop runs its inbox before it next waits.
    private func hand(_ work: Work) -> Bool {
        let onLoop = inEventLoop
        var accepted = true
        let mustWake = inbox.withLock { inbox -> Bool in
            if inbox.stopped {
                accepted = false
                return false
            }
            inbox.tasks.append(work)
            if onLoop || inbox.wakePending { return false }
            inbox.wakePending = true
            return true
        }
        if mustWake { wake() }
        return accepted
    }

    /// Asks the loop to return from `run()` after its current iteration. Safe from any thread.
    public func stop() {
        inbox.withLock { $0.stopRequested = true }
        wake()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: Loop-thread API

    /// Watches `fd` for the epoll `events`, reported to `source` (the transport's own descriptors: a listener, a
    /// connection); `IOLoop.watch` is the same for other modules, in `IOInterest` terms.
    package func watch(fd: Int32, events: UInt32, source: any EventSource) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = try systemCall("epoll_ctl(ADD)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
        sources[fd] = source
    }

    /// Changes the events watched for `fd`; false when the kernel refused (the caller closes the connection,
    /// which could otherwise stall forever waiting for an EPOLLOUT that was never armed).
    @discardableResult
    package func rewatch(fd: Int32, events: UInt32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        return epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) == 0
    }

    /// Points an already registered descriptor at another source (a TLS handshake handing over to HTTP/2).
    package func replaceSource(fd: Int32, with source: any EventSource) {
        sources[fd] = source
    }

    /// Stops watching `fd` (harmless when it is not watched). Call before closing it.
    package func unwatch(fd: Int32) {
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        sources[fd] = nil
    }

    /// Runs `body` on this loop at `deadline` (at the next timer pass when it has passed). Call on the loop thread
    /// only.
    @discardableResult
    public func scheduleTimer(at deadline: MonotonicInstant, _ body: @escaping () -> Void) -> IOLoopTimer {
        timers.schedule(at: deadline, .closure(body))
    }

    /// Runs `body` on this loop after `delay`. Call on the loop thread only.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> IOLoopTimer {
        timers.schedule(at: .now() + delay, .closure(body))
    }

    /// Calls `target.timerFired()` on this loop at `deadline` (at once when it has passed), holding the target
    /// until then (or until cancelled); nothing is allocated for it and the clock is not read. Call on the loop
    /// thread only.
    public func scheduleTimer(at deadline: MonotonicInstant, target: any TimerTarget) -> IOLoopTimer {
        timers.schedule(at: deadline, .target(target))
    }

    /// Cancels a timer of this loop; harmless when it fired already. Call on the loop thread only.
    public func cancelTimer(_ timer: IOLoopTimer) {
        timers.cancel(timer)
    }

    /// Asks for `target.iterationEnded()` once, at the end of this loop iteration. Call on the loop thread only.
    public func atIterationEnd(_ target: any IterationEndTarget) {
        guard !target.iterationEndQueued else { return }
        target.iterationEndQueued = true
        atIterationEndTargets.append(target)
    }

    /// Runs the loop on the calling thread until `stop()`.
    package func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        started.store(true, ordering: .releasing)
        // `IOLoops.current` finds this loop on this thread while it runs (the slot lives as long as `run()`).
        let slot = IOLoopSlot(self)
        IOLoops.setCurrent(slot)
        defer {
            IOLoops.setCurrent(nil)
            withExtendedLifetime(slot) {}
        }
        running = true
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while running {
            let timeout = millisecondsUntilNextTimer()
            let count = events.withUnsafeMutableBufferPointer {
                epoll_wait(epollFD, $0.baseAddress, Int32($0.count), timeout)
            }
            if count < 0 && clinux_errno() != EINTR {
                preconditionFailure("epoll_wait failed: errno \(clinux_errno())")
            }
            for i in 0..<max(0, Int(count)) {
                let fd = events[i].data.fd
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    continue
                }
                sources[fd]?.handle(events: events[i].events)
            }
            runTasks()
            runDueTimers()
            runIterationEnds()
        }
        releaseEverything()
        threadID.store(0, ordering: .relaxed)
    }

    /// After the last iteration the loop lets go of what it still holds: its sources, timers and queued tasks
    /// (and, through `Inbox.stopped`, any task handed over later). Each of those holds the loop, so keeping them
    /// would keep both alive for good; their owners close what must be closed before the loop stops
    /// (`HTTP2Server.stop()`). Released outside the lock and after the fields are emptied: a deinit that runs
    /// here may still call into the loop.
    private func releaseEverything() {
        var queued: [Work] = []
        inbox.withLock { inbox in
            inbox.stopped = true
            swap(&queued, &inbox.tasks)
        }
        // Queued jobs are tasks that must still end: they go on in Swift's global pool.
        for case .job(let job) in queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        var held: [Int32: any EventSource] = [:]
        swap(&held, &sources)
        var scheduled = TimerQueue<TimerAction>()
        swap(&scheduled, &timers)
        var targets: [any IterationEndTarget] = []
        swap(&targets, &atIterationEndTargets)
        var kept: [ObjectIdentifier: AnyObject] = [:]
        swap(&kept, &locals)
        spareIterationEndTargets = []
        spareTasks = []
        withExtendedLifetime((queued, held, scheduled, targets, kept)) {}
    }

    private func millisecondsUntilNextTimer() -> Int32 {
        if !inbox.withLock({ $0.tasks.isEmpty }) { return 0 }
        guard let deadline = timers.nextDeadline() else { return -1 }
        let now = MonotonicInstant.now()
        if deadline <= now { return 0 }
        return Int32(min((deadline - now).millisecondsRoundedUp, 60_000))  // rounded up: never wakes early
    }

    private func runTasks() {
        // The inbox's array and this loop's spare one trade places: both stay uniquely referenced, so neither
        // is reallocated on a pass (a copy would share storage, and clearing it would allocate anew).
        var tasks = spareTasks
        spareTasks = []
        let stop = inbox.withLock { inbox -> Bool in
            if !inbox.tasks.isEmpty { swap(&tasks, &inbox.tasks) }
            inbox.wakePending = false
            return inbox.stopRequested
        }
        for work in tasks {
            switch work {
            case .closure(let task): task()
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        tasks.removeAll(keepingCapacity: tasks.capacity <= Self.keptSpareCapacity)
        spareTasks = tasks
        if stop { running = false }
    }

    private func runDueTimers() {
        let now = MonotonicInstant.now()
        let mark = timers.mark
        // One at a time: a timer cancelled by an earlier one of the same pass must not run.
        while let action = timers.popNextDue(now: now, scheduledBefore: mark) {
            switch action {
            case .closure(let body): body()
            case .target(let target): target.timerFired()
            }
        }
    }

    private func runIterationEnds() {
        while !atIterationEndTargets.isEmpty {
            // Traded with the spare array, as the tasks are: no allocation per pass.
            var batch = spareIterationEndTargets
            spareIterationEndTargets = []
            swap(&batch, &atIterationEndTargets)
            for target in batch {
                target.iterationEndQueued = false
                target.iterationEnded()
            }
            batch.removeAll(keepingCapacity: batch.capacity <= Self.keptSpareCapacity)
            spareIterationEndTargets = batch
        }
    }
}

// MARK: - IOLoop

/// A descriptor watched for another module (`IOLoop.watch`): epoll's mask turned into `IOReadiness`, and who
/// asked (only they may change or end the watch).
private final class ReadinessWatch: EventSource {
    let owner: ObjectIdentifier
    var onReady: (IOReadiness) -> Void

    init(owner: ObjectIdentifier, _ onReady: @escaping (IOReadiness) -> Void) {
        self.owner = owner
        self.onReady = onReady
    }

    func handle(events: UInt32) {
        var readiness: IOReadiness = []
        if events & EPOLLIN.rawValue != 0 { readiness.insert(.readable) }
        if events & EPOLLOUT.rawValue != 0 { readiness.insert(.writable) }
        if events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { readiness.insert(.failed) }
        onReady(readiness)
    }
}

extension EventLoop: IOLoop {
    public func watch(
        fd: Int32, interest: IOInterest, owner: AnyObject, _ onReady: @escaping (IOReadiness) -> Void
    ) -> Bool {
        assertInLoop()
        var events: UInt32 = 0
        if interest.contains(.readable) { events |= EPOLLIN.rawValue }
        if interest.contains(.writable) { events |= EPOLLOUT.rawValue }
        let owner = ObjectIdentifier(owner)
        switch sources[fd] {
        case nil:
            break
        case let watch as ReadinessWatch:
            if rewatch(fd: fd, events: events) {
                if watch.owner == owner {
                    watch.onReady = onReady
                } else {
                    sources[fd] = ReadinessWatch(owner: owner, onReady)
                }
                return true
            }
            // ENOENT: closed without `unwatch` (the kernel dropped it from the set) and its number reused since,
            // added afresh below. Anything else: the old registration cannot be trusted either, so it goes.
            if clinux_errno() != ENOENT { _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil) }
            sources[fd] = nil
        default:
            return false  // a descriptor of the loop's own (a connection): never another module's
        }
        do {
            try watch(fd: fd, events: events, source: ReadinessWatch(owner: owner, onReady))
            return true
        } catch {
            return false
        }
    }

    public func unwatch(fd: Int32, owner: AnyObject) {
        assertInLoop()
        guard let watch = sources[fd] as? ReadinessWatch, watch.owner == ObjectIdentifier(owner) else { return }
        unwatch(fd: fd)
    }

    public func loopLocal(_ key: ObjectIdentifier) -> AnyObject? {
        assertInLoop()
        return locals[key]
    }

    public func setLoopLocal(_ key: ObjectIdentifier, _ value: AnyObject?) {
        assertInLoop()
        locals[key] = value
    }
}
