internal import CCurl
import GatewayFoundation
import Synchronization

/// The client's multi handles on event loops: one per loop that has sent a request through this client, made on
/// that loop at its first call and kept there (`IOLoop.setLoopLocal`) until the loop stops or the client shuts
/// down. A loop reaches its own handle without a lock; the lists here are touched when a handle is made, when the
/// metrics are read and at shutdown.
final class LoopCurlHandles: Sendable {
    /// The key of this client's handle among a loop's local values. An object of its own, held by every lease
    /// (not this object's address): while a lease lives, no later client can be given the same key.
    private final class Key: Sendable {}

    private let configuration: UpstreamHTTPClient.Configuration
    private let share: CurlShare?
    private let key = Key()
    private let closed = Atomic<Bool>(false)
    /// The ids of calls handed over from off the loop (negative, so they never meet those a loop gives its own
    /// callers).
    private let handedOverIDs = Atomic<Int>(0)
    /// The handles, weakly: a loop that stopped let go of its handle, and with it of the loop.
    private let drivers = Lock<[WeakDriver]>([])
    /// Every handle's counters, kept after the handle is gone (one per loop that ever called).
    private let counters = Lock<[UpstreamCounters]>([])

    private struct WeakDriver {
        weak var driver: LoopCurlDriver?
    }

    init(configuration: UpstreamHTTPClient.Configuration, share: CurlShare?) {
        self.configuration = configuration
        self.share = share
    }

    /// The counters of every loop's handle.
    var metrics: UpstreamMetrics {
        counters.withLock { $0 }.reduce(UpstreamMetrics()) { $0 + $1.value }
    }

    /// Sends `request` through the handle of the loop the caller runs on; nil (nothing sent) when it runs on none.
    /// The answer resumes the caller on that loop.
    func sendOnCurrentLoop(_ request: UpstreamRequest) async throws(UpstreamTransportError) -> UpstreamResponse? {
        // Read before the first suspension: everything up to the submission below runs on this thread.
        guard let loop = IOLoops.current else { return nil }
        let driver = try self.driver(on: loop)
        let id = driver.nextID()
        let result = await UpstreamCall.transfer { continuation in
            // Cannot fail (nothing above suspends); checked in release builds too, since the handle must never be
            // touched off its loop.
            guard IOLoops.current === loop else {
                return UpstreamTransportError(.connectionFailed, "the call left its event loop")
            }
            // Still on the loop: the transfer is in the handle before anything else runs there.
            return driver.start(Submission(id: id, request: request, continuation: continuation), callerOnLoop: true)
        } remove: {
            // From any thread; queued on the loop behind the start, so it finds the transfer (or its end).
            loop.execute { driver.cancel(id: id) }
        }
        return try result.get()
    }

    /// Sends `request`, from a caller on no loop, through the handle of `loop`: handed over to the loop and
    /// answered from there. Cancellation takes the same path as on a loop (`UpstreamCall`): the removal is queued
    /// on the loop behind the hand-over.
    func send(
        _ request: UpstreamRequest, handingOverTo loop: any IOLoop
    ) async throws(UpstreamTransportError) -> UpstreamResponse {
        guard !closed.load(ordering: .acquiring) else { throw UpstreamTransportError(.shutDown, "client shut down") }
        let id = -handedOverIDs.add(1, ordering: .relaxed).newValue
        let key = ObjectIdentifier(self.key)
        let result = await UpstreamCall.transfer { continuation in
            let handOver = HandOver(Submission(id: id, request: request, continuation: continuation))
            let queued = loop.execute {
                guard let submission = handOver.take() else { return }
                if let refusal = self.start(submission, handedOverTo: loop) {
                    submission.continuation.resume(returning: .failure(refusal))
                }
            }
            guard queued else {
                _ = handOver.take()  // answered by the caller of this closure
                return UpstreamTransportError(.shutDown, "the client's event loop stopped")
            }
            return nil
        } remove: {
            loop.execute { (loop.loopLocal(key) as? LoopCurlDriver.Lease)?.driver.cancel(id: id) }
        }
        return try result.get()
    }

    /// Starts a handed-over submission in the handle of `loop` (on it); the error that refuses it, if any.
    private func start(_ submission: Submission, handedOverTo loop: any IOLoop) -> UpstreamTransportError? {
        let driver: LoopCurlDriver
        do throws(UpstreamTransportError) {
            driver = try self.driver(on: loop)
        } catch {
            return error
        }
        return driver.start(submission, callerOnLoop: false)
    }

    /// Fails every loop's transfers with `.shutDown` and frees its handle, on the loop (a loop that stopped did so
    /// already). Later calls fail with `.shutDown`. Idempotent.
    func shutdown() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let key = ObjectIdentifier(self.key)
        for driver in drivers.withLock({ $0.compactMap(\.driver) }) {
            driver.loop.execute {
                driver.close(UpstreamTransportError(.shutDown, "client shut down"))
                driver.loop.setLoopLocal(key, nil)  // the lease goes, and with it the loop's hold on the handle
            }
        }
    }

    private func driver(on loop: any IOLoop) throws(UpstreamTransportError) -> LoopCurlDriver {
        guard !closed.load(ordering: .acquiring) else {
            throw UpstreamTransportError(.shutDown, "client shut down")
        }
        let key = ObjectIdentifier(self.key)
        if let lease = loop.loopLocal(key) as? LoopCurlDriver.Lease { return lease.driver }
        let driver = try LoopCurlDriver(loop: loop, configuration: configuration, share: share)
        let admitted = drivers.withLock { drivers in
            // Checked again under the lock: a shutdown that has listed the handles already would miss this one.
            guard !closed.load(ordering: .acquiring) else { return false }
            drivers.removeAll { $0.driver == nil }
            drivers.append(WeakDriver(driver: driver))
            return true
        }
        guard admitted else {
            driver.close(UpstreamTransportError(.shutDown, "client shut down"))
            throw UpstreamTransportError(.shutDown, "client shut down")
        }
        counters.withLock { $0.append(driver.counters) }
        loop.setLoopLocal(key, LoopCurlDriver.Lease(driver, key: self.key))
        return driver
    }
}

/// A submission on its way to a loop from off it. A loop that stops before running the hand-over lets it go
/// unrun: the caller is then answered `.shutDown` here, so no call is left waiting.
private final class HandOver: Sendable {
    private let submission: Lock<Submission?>

    init(_ submission: Submission) { self.submission = Lock(submission) }

    /// The submission, once (nil when taken already).
    func take() -> Submission? {
        submission.withLock { taken in
            defer { taken = nil }
            return taken
        }
    }

    deinit {
        take()?.continuation.resume(returning: .failure(UpstreamTransportError(.shutDown, "event loop stopped")))
    }
}

/// A multi handle driven by one event loop: libcurl tells it which sockets to watch and when its next timeout
/// is (`CURLMOPT_SOCKETFUNCTION`, `CURLMOPT_TIMERFUNCTION`), the loop reports readiness and timeouts back
/// through `curl_multi_socket_action`. Confined to its loop; only `counters` (its own lock) and `loop.execute`
/// are used from other threads.
final class LoopCurlDriver: @unchecked Sendable {
    /// What the loop keeps for the client: when the loop stops and lets it go, the handle is closed (its
    /// transfers answered `.shutDown`), on the loop's thread.
    final class Lease {
        let driver: LoopCurlDriver
        /// The client's key, held so that its address names this client for as long as the lease is kept.
        private let key: AnyObject
        init(_ driver: LoopCurlDriver, key: AnyObject) {
            self.driver = driver
            self.key = key
        }
        deinit { driver.close(UpstreamTransportError(.shutDown, "event loop stopped")) }
    }

    let loop: any IOLoop
    let counters = UpstreamCounters()
    /// Nil once closed.
    private var handle: CurlMulti?
    private var closing = false
    private var timer: IOLoopTimer?
    private var watched: Set<Int32> = []
    /// Transfers whose socket the loop refused to watch, failed at the next timer pass.
    private var refused: [UnsafeMutableRawPointer] = []
    private var lastID = 0

    init(
        loop: any IOLoop, configuration: UpstreamHTTPClient.Configuration, share: CurlShare?
    ) throws(UpstreamTransportError) {
        self.loop = loop
        let handle = try CurlMulti(configuration: configuration, counters: counters, share: share)
        self.handle = handle
        // The callbacks find this object through their user pointer: it outlives the multi handle (`close`
        // frees the handle while this object is held by its caller).
        let me = Unmanaged.passUnretained(self).toOpaque()
        try handle.check(ccurl_multi_setopt_ptr(handle.multi, CURLMOPT_SOCKETDATA, me), "SOCKETDATA")
        try handle.check(ccurl_multi_setopt_ptr(handle.multi, CURLMOPT_TIMERDATA, me), "TIMERDATA")
        try handle.check(ccurl_multi_setopt_socketfunction(handle.multi, loopSocketCallback), "SOCKETFUNCTION")
        try handle.check(ccurl_multi_setopt_timerfunction(handle.multi, loopTimerCallback), "TIMERFUNCTION")
    }

    deinit {
        // Only a handle whose set-up failed gets here unclosed: no callback may reach an object being destroyed.
        if let handle {
            _ = ccurl_multi_setopt_socketfunction(handle.multi, nil)
            _ = ccurl_multi_setopt_timerfunction(handle.multi, nil)
        }
    }

    func nextID() -> Int {
        lastID += 1
        return lastID
    }

    /// Adds the submission's transfer; the error that refuses it, if any (the caller answers the continuation).
    func start(_ submission: Submission, callerOnLoop: Bool) -> UpstreamTransportError? {
        guard let handle else { return UpstreamTransportError(.shutDown, "client shut down") }
        if callerOnLoop { counters.add { $0.transfersOnCallerLoops += 1 } }
        return handle.start(submission)
    }

    func cancel(id: Int) {
        handle?.cancel(id: id)
    }

    /// Answers every transfer with `error`, frees the multi handle (libcurl closes its sockets, which it reports
    /// through the socket callback) and stops watching anything. Idempotent.
    func close(_ error: UpstreamTransportError) {
        guard let handle, !closing else { return }
        closing = true
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        // Unwatched while libcurl's sockets are still open (their numbers cannot yet belong to anyone else); the
        // REMOVEs libcurl reports while it cleans up then find nothing left to do.
        for fd in watched { loop.unwatch(fd: fd, owner: self) }
        watched = []
        handle.release(error)
        self.handle = nil
    }

    // MARK: libcurl's callbacks and the loop's events

    /// `CURLMOPT_SOCKETFUNCTION`: what to watch `fd` for now, for the transfer `easy`. When the loop refuses a
    /// watch (the kernel out of memory), only that transfer fails, just after this callback (libcurl must not be
    /// re-entered from it); returning -1 instead would make libcurl fail every transfer of the handle.
    fileprivate func socketChanged(_ fd: Int32, what: Int32, easy: UnsafeMutableRawPointer?) {
        if what == CURL_POLL_REMOVE {
            if watched.remove(fd) != nil { loop.unwatch(fd: fd, owner: self) }
            return
        }
        guard !closing else { return }
        var interest: IOInterest = []
        if what & CURL_POLL_IN != 0 { interest.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { interest.insert(.writable) }
        if loop.watch(fd: fd, interest: interest, owner: self, { [weak self] in self?.socketReady(fd, $0) }) {
            watched.insert(fd)
            return
        }
        if watched.remove(fd) != nil { loop.unwatch(fd: fd, owner: self) }
        guard let easy else { return }
        refused.append(easy)
        loop.scheduleTimer(after: .zero) { [weak self] in self?.failRefused() }
    }

    /// Ends the transfers whose socket the loop would not watch.
    private func failRefused() {
        let transfers = refused
        refused = []
        guard let handle, !closing else { return }
        for easy in transfers {
            handle.fail(easy: easy, UpstreamTransportError(.connectionFailed, "the event loop cannot watch its socket"))
        }
    }

    /// `CURLMOPT_TIMERFUNCTION`: libcurl's next timeout (-1: none). `curl_multi_socket_action` must not be called
    /// from inside the callback, so even a zero timeout goes through a loop timer (due in this same iteration).
    fileprivate func timerChanged(milliseconds: Int) {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        guard milliseconds >= 0, !closing else { return }
        timer = loop.scheduleTimer(after: .milliseconds(milliseconds)) { [weak self] in self?.timedOut() }
    }

    private func socketReady(_ fd: Int32, _ readiness: IOReadiness) {
        var mask: Int32 = 0
        if readiness.contains(.readable) { mask |= CURL_CSELECT_IN }
        if readiness.contains(.writable) { mask |= CURL_CSELECT_OUT }
        if readiness.contains(.failed) { mask |= CURL_CSELECT_ERR }
        act(on: fd, mask)
    }

    private func timedOut() {
        timer = nil
        act(on: CURL_SOCKET_TIMEOUT, 0)
    }

    private func act(on fd: Int32, _ mask: Int32) {
        guard let handle, !closing else { return }
        var running: Int32 = 0
        let code = curl_multi_socket_action(handle.multi, fd, mask, &running)
        if code != CURLM_OK {
            // Only out-of-memory or internal errors: fail what runs rather than spin on it.
            handle.failAll(
                UpstreamTransportError(
                    .connectionFailed, "curl_multi_socket_action: \(String(cString: curl_multi_strerror(code)))"))
        }
        handle.collectFinished()
    }
}

private let loopSocketCallback: curl_socket_callback = { easy, fd, what, user, _ in
    guard let user else { return -1 }
    let driver = Unmanaged<LoopCurlDriver>.fromOpaque(user).takeUnretainedValue()
    driver.socketChanged(fd, what: what, easy: easy)
    return 0
}

private let loopTimerCallback: curl_multi_timer_callback = { _, milliseconds, user in
    guard let user else { return -1 }
    let driver = Unmanaged<LoopCurlDriver>.fromOpaque(user).takeUnretainedValue()
    driver.timerChanged(milliseconds: milliseconds)
    return 0
}
