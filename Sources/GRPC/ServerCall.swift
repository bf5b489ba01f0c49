import EventLoops
import GatewayFoundation
import HTTPServer

/// One gRPC call on one HTTP/2 stream, confined to the stream's event loop.
///
/// A unary or server-streaming call reads exactly one request message, then runs its handler; a bidirectional
/// call runs its handler from the request head on and hands it each message as it arrives. Either way response
/// headers are held until the first message (gRFC A6), so an error known before any message goes out
/// Trailers-Only.
final class ServerCall: HTTP2StreamDelegate, TimerTarget, IterationEndTarget, Slotted {
    /// Unread request messages a bidirectional call may hold.
    static let maxPendingMessages = 256

    let stream: any HTTPServerStream
    let handler: MethodHandler
    let context: ServerContext
    private let registry: CallRegistry
    private var deframer: MessageDeframer
    private var request: [UInt8]?
    private var task: Task<Void, Never>?
    private var deadlineTimer: IOLoopTimer?
    /// Where the call is in its life, and its deadline rules: decided there, performed here.
    private var state: CallState
    var finished: Bool { state.isFinished }
    /// What only streaming calls use (nil until one does): a unary call carries, checks and tears down one
    /// nil reference instead of two optional continuations.
    private var streaming: StreamingParts?
    /// What later sends throw once the call ended: the status it failed with, or "already ended" after OK.
    var endStatus: RPCStatus? {
        guard finished else { return nil }
        return failure ?? RPCStatus(.cancelled, "the call has already ended")
    }
    /// The status a call that did not end OK ended with (kept only then: most calls end OK).
    private var failure: RPCStatus?
    /// The handler's status for a shutdown that ends the call (nil: the server's own).
    var shutdownStatus: RPCStatus?
    /// Where the loop's `CallRegistry` keeps this call (-1: not there).
    var slot = -1
    /// Waiting for the end of the loop iteration that started it, to arm its deadline timer then.
    var iterationEndQueued = false

    /// The method's metrics, access log and span.
    private let recorder: RPCRecorder
    /// When the call started (its deadline was computed from the same reading).
    private let started: MonotonicInstant

    /// `requestDeadline`: when set (a streaming call without `grpc-timeout`), the call ends DEADLINE_EXCEEDED
    /// if its request has not fully arrived by then; once it has, the call has no deadline.
    init(
        stream: any HTTPServerStream, handler: MethodHandler, context: ServerContext, registry: CallRegistry,
        maxMessageSize: Int, recorder: RPCRecorder, started: MonotonicInstant,
        requestDeadline: MonotonicInstant? = nil
    ) {
        self.recorder = recorder
        self.started = started
        recorder.started()
        self.stream = stream
        self.handler = handler
        self.context = context
        self.registry = registry
        self.deframer = MessageDeframer(maxMessageSize: maxMessageSize)
        var requests = CallState.Requests.single
        if case .bidiStreaming = handler { requests = .stream }
        self.state = CallState(
            method: context.method, requests: requests, callDeadline: context.deadline,
            requestDeadline: requestDeadline)
        // Inline calls complete on the loop as soon as their request is in: shutdown never has to end them.
        if case .unaryInline = handler {} else { registry.add(self) }
        if case .bidiStreaming(let body) = handler { startBidirectional(body) }
        // Armed once the loop has handled the rest of what it read: a unary call whose request came in the same
        // read is over by then, and never schedules and cancels a timer. Nothing can fire in between anyway.
        if state.activeDeadline != nil { stream.eventLoop.atIterationEnd(self) }
    }

    func iterationEnded() {
        guard !finished, deadlineTimer == nil else { return }
        armDeadlineTimer()
    }

    /// Arms the one timer for the state's active deadline (none when there is none); no clock read.
    private func armDeadlineTimer() {
        guard let deadline = state.activeDeadline else { return }
        deadlineTimer = stream.eventLoop.scheduleTimer(at: deadline, target: self)
    }

    // MARK: HTTP2StreamDelegate

    func stream(_ stream: any HTTPServerStream, received data: UnsafeRawBufferPointer) {
        guard !finished, task == nil || streaming?.inbound != nil else {
            stream.releaseReceived(data.count)  // dropped, so it holds no budget
            return
        }
        deframer.append(data)
        do {
            while let message = try deframer.next() {
                switch state.messageArrived() {
                case .keep:
                    request = message
                case .deliver:
                    deadlineMayHaveLapsed()
                    // Handed to the handler's sequence (itself bounded to `maxPendingMessages`).
                    stream.releaseReceived(5 + message.count)
                    // The handler reads at its pace; more than `maxPendingMessages` unread is a client
                    // ignoring the answers, not a stream to buffer without end.
                    if case .dropped = streaming?.inbound?.yield(message) {
                        finish(
                            RPCStatus(
                                .resourceExhausted,
                                "more than \(Self.maxPendingMessages) request messages are waiting to be read; send fewer at a time"
                            ))
                        return
                    }
                case .fail(let status):
                    finish(status)
                    return
                case .drop:
                    stream.releaseReceived(5 + message.count)
                }
            }
        } catch {
            finish(error)
        }
    }

    func streamRequestEnded(_ stream: any HTTPServerStream) {
        switch state.requestEnded(partialMessage: !deframer.isEmpty) {
        case .start:
            deadlineMayHaveLapsed()
            if let request { start(request) }
        case .closeRequests:
            endRequests()
        case .fail(let status):
            finish(status)
        case .none:
            break
        }
    }

    func streamWritable(_ stream: any HTTPServerStream) {
        resumeSender()
    }

    func streamClosed(_ stream: any HTTPServerStream, errorCode: HTTP2ErrorCode) {
        if state.cancelled() {
            failure = RPCStatus(.cancelled, "the client cancelled the call")
            report(.cancelled)
        }
        task?.cancel()
        endRequests()
        cleanUp()
    }

    /// Ends a bidirectional call's request sequence (its handler sees the end), once.
    private func endRequests() {
        guard let streaming, let inbound = streaming.inbound else { return }
        inbound.finish()
        streaming.inbound = nil
    }

    // MARK: Running the handler

    /// The call's streaming parts, made on first need.
    private var streamingParts: StreamingParts {
        if let streaming { return streaming }
        let parts = StreamingParts()
        streaming = parts
        return parts
    }

    private func startBidirectional(
        _ body:
            @escaping @Sendable (AsyncStream<[UInt8]>, ServerContext, any ResponseStreamWriter) async throws(RPCStatus)
            ->
            Void
    ) {
        let (requests, continuation) = AsyncStream.makeStream(
            of: [UInt8].self, bufferingPolicy: .bufferingOldest(Self.maxPendingMessages))
        streamingParts.inbound = continuation
        let outlet = CallOutlet(self)
        let context = self.context
        task = Task(executorPreference: stream.eventLoop) {
            let final: RPCStatus = await context.bound {
                do throws(RPCStatus) {
                    try await body(requests, context, outlet)
                    return .ok
                } catch {
                    return error
                }
            }
            outlet.execute { call in call.finish(final) }
        }
    }

    /// The request is in: a deadline that only bounded its arrival may no longer apply.
    private func deadlineMayHaveLapsed() {
        guard state.activeDeadline == nil, let deadlineTimer else { return }
        stream.eventLoop.cancelTimer(deadlineTimer)
        self.deadlineTimer = nil
    }

    private func start(_ request: [UInt8]) {
        // The message is the handler's now: its bytes no longer count against the connection's budget.
        stream.releaseAllReceived()
        let context = self.context
        switch handler {
        case .unaryInline(let body):
            switch body(request, context) {
            case .success(let response): complete(with: response)
            case .failure(let status): finish(status)
            }
        case .unaryInlineOrTask(let body):
            switch body(request, context) {
            case .done(.success(let response)): complete(with: response)
            case .done(.failure(let status)): finish(status)
            case .task(let rest):
                let outlet = CallOutlet(self)
                task = Task(executorPreference: stream.eventLoop) {
                    let result = await context.bound { await rest() }
                    outlet.execute { call in
                        switch result {
                        case .success(let response): call.complete(with: response)
                        case .failure(let status): call.finish(status)
                        }
                    }
                }
            }
        case .unary(let body):
            let outlet = CallOutlet(self)
            task = Task(executorPreference: stream.eventLoop) {
                let result: Result<FramedMessage, RPCStatus> = await context.bound {
                    do throws(RPCStatus) {
                        return .success(try await body(request, context))
                    } catch {
                        return .failure(error)
                    }
                }
                outlet.execute { call in
                    switch result {
                    case .success(let response): call.complete(with: response)
                    case .failure(let status): call.finish(status)
                    }
                }
            }
        case .bidiStreaming:
            break  // started with the request head
        case .serverStreaming(let body):
            let outlet = CallOutlet(self)
            task = Task(executorPreference: stream.eventLoop) {
                let final: RPCStatus = await context.bound {
                    do throws(RPCStatus) {
                        try await body(request, context, outlet)
                        return .ok
                    } catch {
                        return error
                    }
                }
                outlet.execute { call in call.finish(final) }
            }
        }
    }

    /// Writes one message (sending the response head first if needed): its array, prefix included, becomes
    /// the stream's queued bytes when nothing else is queued.
    func writeMessage(_ message: FramedMessage) {
        guard !finished else { return }
        if !stream.hasResponded {
            state.responseStarted()
            respond(registry.responseHead, endStream: false)
        }
        stream.write(message.bytes)
        recorder.messageSent()
    }

    /// Sends `head` with the call's `x-request-id`: the caller's own, or a generated one when the call is
    /// logged (a generated id is how a caller finds the call's log line; a health check has none).
    private func respond(_ head: HeaderBlock, endStream: Bool) {
        guard context.callerRequestID != nil || recorder.logsCalls else {
            stream.respond(head, endStream: endStream)
            return
        }
        context.withRequestIDBytes { id in stream.respond(head, adding: ("x-request-id", id), endStream: endStream) }
    }

    /// True when more may be written before waiting for the client.
    var canWrite: Bool { stream.bufferedBytes < registry.streamWriteHighWatermark }

    /// Writes one message for a streaming handler, then resumes it at once when there is room for more,
    /// or later when the client has read enough (backpressure), or with the status that ended the call.
    func enqueue(
        _ message: FramedMessage, shutdownStatus: RPCStatus? = nil,
        resuming continuation: CheckedContinuation<RPCStatus?, Never>
    ) {
        if let endStatus {
            continuation.resume(returning: endStatus)
            return
        }
        writeMessage(message)
        if let shutdownStatus { self.shutdownStatus = shutdownStatus }
        if canWrite {
            continuation.resume(returning: nil)
        } else {
            let parts = streamingParts
            precondition(parts.sendWaiter == nil, "two concurrent sends on one call")
            parts.sendWaiter = continuation
        }
    }

    private func resumeSender() {
        if let streaming, let waiter = streaming.sendWaiter, finished || canWrite {
            streaming.sendWaiter = nil
            waiter.resume(returning: finished ? endStatus : nil)
        }
    }

    private func complete(with response: FramedMessage) {
        writeMessage(response)
        finish(.ok)
    }

    /// Ends the call with `status`: trailers after the messages, or Trailers-Only when none was sent.
    func finish(_ status: RPCStatus) {
        guard let ending = state.finish(status.code) else { return }
        report(status.code)
        if status.code != .ok { failure = status }
        switch ending {
        case .trailers:
            stream.finish(trailers: StatusTrailers.block(for: status, ok: registry.okTrailers))
        case .trailersOnly:
            respond(StatusTrailers.trailersOnly(for: status), endStream: true)
        }
        if status.code != .ok { task?.cancel() }
        // Most calls have no request sequence and nothing left to deframe: nothing to copy or rebuild then.
        endRequests()
        if !deframer.isEmpty { deframer = MessageDeframer(maxMessageSize: deframer.maxMessageSize) }
        request = nil
        stream.releaseAllReceived()
        cleanUp()
    }

    func timerFired() {
        deadlineExceeded()
    }

    private func deadlineExceeded() {
        deadlineTimer = nil
        guard state.deadlinePassed(now: .now()) else {
            armDeadlineTimer()  // woken a little early, or the deadline moved: wait for what remains
            return
        }
        finish(RPCStatus(.deadlineExceeded, "the call's deadline passed before \(context.method) completed"))
    }

    private func report(_ code: StatusCode) {
        let seconds = MonotonicInstant.now().seconds(since: started)
        recorder.finished(
            path: context.method, status: code, seconds: seconds, metadata: context.metadata,
            annotations: context.annotations)
    }

    private func cleanUp() {
        if let deadlineTimer {
            stream.eventLoop.cancelTimer(deadlineTimer)
            self.deadlineTimer = nil
        }
        resumeSender()
        registry.remove(self)
    }
}

/// The parts of a call only streaming calls use, confined to the call's loop like the call.
private final class StreamingParts {
    /// Bidirectional calls: where arriving messages go.
    var inbound: AsyncStream<[UInt8]>.Continuation?
    /// A streaming handler's send waiting for the client to read (backpressure).
    var sendWaiter: CheckedContinuation<RPCStatus?, Never>?
}

/// The thread-safe face of a `ServerCall` for its handler task. The task prefers the call's loop as its
/// executor, so it is normally on the loop already and touches the call at once; from anywhere else (work
/// moved off the loop) a touch hops to the loop.
final class CallOutlet: ResponseStreamWriter, Sendable {
    private let call: LoopBound<ServerCall>

    init(_ call: ServerCall) {
        self.call = LoopBound(call, on: call.stream.eventLoop)
    }

    /// Runs `body` with the call: now when on its loop (a task's job runs at the top of a loop iteration,
    /// never inside a connection's callbacks, so this re-enters nothing), else soon on the loop.
    func execute(_ body: @escaping @Sendable (ServerCall) -> Void) {
        if call.eventLoop.inEventLoop {
            body(call.value)
        } else {
            call.execute(body)
        }
    }

    func send(_ message: FramedMessage) async throws(RPCStatus) {
        try await send(message, shutdownStatus: nil)
    }

    func send(_ message: FramedMessage, shutdownStatus: RPCStatus) async throws(RPCStatus) {
        try await send(message, shutdownStatus: Optional(shutdownStatus))
    }

    func setShutdownStatus(_ status: RPCStatus) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            execute { call in
                call.shutdownStatus = status
                continuation.resume()
            }
        }
    }

    private func send(_ message: FramedMessage, shutdownStatus: RPCStatus?) async throws(RPCStatus) {
        // One hop to the loop: write, then come back when there is room for the next message.
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<RPCStatus?, Never>) in
            execute { call in call.enqueue(message, shutdownStatus: shutdownStatus, resuming: continuation) }
        }
        if let outcome { throw outcome }
        if Task.isCancelled { throw RPCStatus(.cancelled, "the call was cancelled") }
    }
}
