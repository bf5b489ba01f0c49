internal import CCurl
import Foundation
import GatewayFoundation

/// An HTTP client for the App Store Server API, on libcurl's multi interface.
///
/// Callers `await send(_:)` from any task. A caller running on an event loop (a gRPC handler: its task prefers
/// its connection's loop) is served by a multi handle of that loop's own, driven by the loop
/// (`CURLMOPT_SOCKETFUNCTION`/`TIMERFUNCTION` into its epoll set): the request, the wait for Apple and the
/// answer all happen on the caller's thread, with no hand-over at all. Any other caller is handed over to the
/// loop the client was given for them (`init(configuration:loop:)`), whose handle is driven the same way; a
/// client given none drives a multi handle of its own on a thread of its own with
/// `curl_multi_perform`/`curl_multi_poll`, woken with `curl_multi_wakeup`. Either way no thread ever blocks on
/// the network. `https://` URLs negotiate HTTP/2 by
/// ALPN and multiplex (`CURLPIPE_MULTIPLEX` + `CURLOPT_PIPEWAIT`): hundreds of concurrent calls to one host
/// share one or two connections per multi handle. (Debian's curl 7.88.1 breaks connection reuse with h2c
/// prior knowledge, so cleartext `http://` stays HTTP/1.1; it exists for tests and the simulator.)
public final class UpstreamHTTPClient: Sendable {
    /// Client settings.
    public struct Configuration: Sendable, Hashable {
        /// A PEM CA bundle trusted instead of the system's (config `apple.caFile`); empty = system CAs.
        public var caFile: String
        /// With `caFile`, keep trusting the system CAs too (config `apple.trustSystemCAs`). Default false.
        public var trustSystemCAs = false
        /// Longest TCP + TLS connection set-up. Default 5 s (config `apple.connectTimeout`).
        public var connectTimeout: Duration
        /// Larger response bodies fail the transfer (`responseTooLarge`). Default 16 MiB.
        public var maxResponseBytes: Int
        /// Connections kept per host at most; further transfers queue inside libcurl. Default 8.
        public var maxConnectionsPerHost: Int
        /// Streams libcurl multiplexes on one HTTP/2 connection at most (the server's
        /// SETTINGS_MAX_CONCURRENT_STREAMS still applies when lower). Default 200.
        public var maxStreamsPerConnection: Int
        /// The `User-Agent` sent.
        public var userAgent: String

        /// Settings; unspecified values take the documented defaults.
        public init(
            caFile: String = "", connectTimeout: Duration = .seconds(5), maxResponseBytes: Int = 16 << 20,
            maxConnectionsPerHost: Int = 8, maxStreamsPerConnection: Int = 200, userAgent: String = "appstore-gateway"
        ) {
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.maxResponseBytes = maxResponseBytes
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxStreamsPerConnection = maxStreamsPerConnection
            self.userAgent = userAgent
        }
    }

    /// The client's own thread, for callers on no loop when it was given no loop for them.
    private let thread: CurlMultiLoop?
    /// The loop callers on no loop are handed over to, if the client was given one.
    private let loopForOthers: (any IOLoop)?
    private let onLoops: LoopCurlHandles

    /// A client. Callers on no event loop are served on `loop` (through the same kind of handle as a caller on
    /// a loop, the handle of `loop`'s own); without one the client starts a thread of its own for them. Throws
    /// `.invalidRequest` when libcurl cannot be initialised.
    public init(
        configuration: Configuration = Configuration(), loop: (any IOLoop)? = nil
    ) throws(UpstreamTransportError) {
        // Every multi handle of this client shares resolved names and TLS sessions (nil: each goes alone).
        let share = CurlShare()
        thread = loop == nil ? try CurlMultiLoop(configuration: configuration, share: share) : nil
        loopForOthers = loop
        onLoops = LoopCurlHandles(configuration: configuration, share: share)
    }

    deinit {
        onLoops.shutdown()
        thread?.shutdown()
    }

    /// Sends `request` and waits for the whole response. Cancelling the calling task removes the transfer
    /// from libcurl and throws `.cancelled`.
    public func send(_ request: UpstreamRequest) async throws(UpstreamTransportError) -> UpstreamResponse {
        if let response = try await onLoops.sendOnCurrentLoop(request) { return response }
        if let loopForOthers { return try await onLoops.send(request, handingOverTo: loopForOthers) }
        guard let loop = thread else { throw UpstreamTransportError(.shutDown, "client shut down") }  // not reached
        let id = loop.nextID()
        let result = await UpstreamCall.transfer { continuation in
            let submitted = loop.submit(Submission(id: id, request: request, continuation: continuation))
            return submitted ? nil : UpstreamTransportError(.shutDown, "client shut down")
        } remove: {
            loop.cancel(id: id)
        }
        return try result.get()
    }

    /// The counters so far, of every multi handle.
    public var metrics: UpstreamMetrics { onLoops.metrics + (thread?.counters.value ?? UpstreamMetrics()) }

    /// Fails queued and running transfers with `.shutDown`, stops the client's thread if it has one (the multi
    /// handle is freed with the client) and asks each loop to free its handle (a loop that already stopped freed
    /// it then). Later `send` calls fail with `.shutDown`. Idempotent.
    public func shutdown() {
        onLoops.shutdown()
        thread?.shutdown()
    }
}

/// The multi handle for callers that run on no event loop, and its thread. Everything under "thread-confined"
/// is touched only by the client thread; the rest of the class talks to it through `shared` and
/// `curl_multi_wakeup` (documented as callable from any thread).
private final class CurlMultiLoop: @unchecked Sendable {
    private struct Shared {
        var submissions: [Submission] = []
        var cancellations: [Int] = []
        var closed = false
        var lastID = 0
    }

    let counters = UpstreamCounters()
    private let shared = Lock(Shared())
    private let exited = DispatchSemaphore(value: 0)
    /// The multi handle (its `multi` pointer is also used from other threads, for `curl_multi_wakeup` only);
    /// freed with this object, after the thread has exited.
    private let handle: CurlMulti

    init(configuration: UpstreamHTTPClient.Configuration, share: CurlShare?) throws(UpstreamTransportError) {
        handle = try CurlMulti(configuration: configuration, counters: counters, share: share)
        Thread.start(named: "upstream-curl") { [self] in run() }
    }

    func nextID() -> Int {
        shared.withLock { state in
            state.lastID += 1
            return state.lastID
        }
    }

    /// Queues `submission` for the client thread; false (nothing queued, the continuation untouched) once the
    /// client is shut down.
    func submit(_ submission: Submission) -> Bool {
        let queued = shared.withLock { state in
            if state.closed { return false }
            state.submissions.append(submission)
            return true
        }
        if queued { wake() }
        return queued
    }

    func cancel(id: Int) {
        let queued = shared.withLock { state in
            guard !state.closed else { return false }
            state.cancellations.append(id)
            return true
        }
        if queued { wake() }
    }

    func shutdown() {
        let first: Bool = shared.withLock { state in
            if state.closed { return false }
            state.closed = true
            return true
        }
        if first {
            wake()
            exited.wait()
        }
    }

    /// Wakes the client thread from `curl_multi_poll`. Called after `shared` is unlocked: a thread woken while
    /// the lock is still held finds it taken and sleeps again until it is released, a second wake-up (measured:
    /// ~30 µs of each call's hand-off). The multi handle lives as long as this object, so waking a thread that
    /// has already exited is harmless.
    private func wake() {
        // The only failure is a bad handle, which cannot happen before `deinit`.
        _ = curl_multi_wakeup(handle.multi)
    }

    // MARK: The client thread

    private func run() {
        while true {
            let (submissions, cancellations, closed) = shared.withLock { state in
                defer {
                    state.submissions = []
                    state.cancellations = []
                }
                return (state.submissions, state.cancellations, state.closed)
            }
            if closed {
                let error = UpstreamTransportError(.shutDown, "client shut down")
                for submission in submissions { submission.continuation.resume(returning: .failure(error)) }
                handle.failAll(error)
                exited.signal()
                return
            }
            for submission in submissions {
                if let refusal = handle.start(submission) {
                    submission.continuation.resume(returning: .failure(refusal))
                }
            }
            for id in cancellations { handle.cancel(id: id) }
            var running: Int32 = 0
            let performed = curl_multi_perform(handle.multi, &running)
            if performed != CURLM_OK && performed != CURLM_CALL_MULTI_PERFORM {
                // Only out-of-memory or internal errors: fail what runs rather than spin on it.
                handle.failAll(
                    UpstreamTransportError(
                        .connectionFailed, "curl_multi_perform: \(String(cString: curl_multi_strerror(performed)))"))
            }
            handle.collectFinished()
            var ready: Int32 = 0
            // Waits for socket activity, libcurl's own timers (it shortens the wait), or a wakeup.
            let polled = curl_multi_poll(handle.multi, nil, 0, 1_000, &ready)
            if polled != CURLM_OK && polled != CURLM_UNRECOVERABLE_POLL {
                // Out of memory or an interrupted wait: back off briefly instead of spinning.
                Thread.sleep(forTimeInterval: 0.001)
            } else if polled == CURLM_UNRECOVERABLE_POLL {
                handle.failAll(UpstreamTransportError(.connectionFailed, "curl_multi_poll cannot wait on its sockets"))
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }
}
