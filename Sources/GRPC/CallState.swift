import GatewayFoundation

/// The life of one gRPC call as a value: awaiting its request → running its handler → streaming its
/// response → finished, with the deadline rules. `ServerCall` feeds it what happened on the stream and
/// performs what it answers; it has no I/O and no clock of its own (it is told the time as `MonotonicInstant`s).
struct CallState: Sendable {
    enum Phase: Sendable, Hashable {
        /// The request message(s) are still arriving; the handler has not started.
        case awaitingRequest
        /// The handler runs; no response message went out yet.
        case running
        /// The response head and at least one message went out.
        case streaming
        /// The call ended with this code (trailers sent, or the client cancelled).
        case finished(StatusCode)
    }

    /// How the call takes its requests.
    enum Requests: Sendable, Hashable {
        /// Exactly one message, then the end of the request (unary and server streaming).
        case single
        /// Any number of messages, handed to the running handler as they arrive (bidirectional).
        case stream
    }

    /// What to do with a message that arrived.
    enum MessageDecision: Sendable, Hashable {
        /// Keep it as the request; start the handler when the request ends.
        case keep
        /// Hand it to the running handler.
        case deliver
        /// End the call with this status.
        case fail(RPCStatus)
        /// The call has ended: drop it.
        case drop
    }

    /// What to do when the request ended.
    enum EndDecision: Sendable, Hashable {
        /// Start the handler with the kept message.
        case start
        /// Tell the running handler its request stream is over.
        case closeRequests
        /// End the call with this status.
        case fail(RPCStatus)
        /// Nothing (the call has ended, or the handler already runs).
        case none
    }

    /// How `finish` must answer.
    enum Ending: Sendable, Hashable {
        /// Trailers after the messages sent.
        case trailers
        /// A Trailers-Only response: nothing was sent yet.
        case trailersOnly
    }

    let method: String
    let requests: Requests
    private(set) var phase: Phase = .awaitingRequest
    /// When the call must be over (absolute); nil = no deadline.
    private var deadline: MonotonicInstant?
    /// True when `deadline` only bounds the arrival of the request (a stream without `grpc-timeout`).
    private var deadlineBoundsRequestOnly: Bool
    private var keptMessage = false

    /// A call to `method`. `callDeadline` comes from `grpc-timeout` (or the server's default for unary
    /// calls); `requestDeadline` bounds only the arrival of the request of a stream without one.
    init(method: String, requests: Requests, callDeadline: MonotonicInstant?, requestDeadline: MonotonicInstant? = nil)
    {
        self.method = method
        self.requests = requests
        deadline = callDeadline ?? requestDeadline
        deadlineBoundsRequestOnly = callDeadline == nil && requestDeadline != nil
        if requests == .stream { phase = .running }  // a bidirectional handler starts with the request head
    }

    /// The deadline that applies now (nil once the request is in, when it only bounded that).
    var activeDeadline: MonotonicInstant? { deadline }

    /// True once the call has ended.
    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    /// A whole request message arrived.
    mutating func messageArrived() -> MessageDecision {
        switch (phase, requests) {
        case (.finished, _):
            return .drop
        case (_, .stream):
            requestArrived()  // a bidirectional call has begun once its first message is in
            return .deliver
        case (.awaitingRequest, .single) where !keptMessage:
            keptMessage = true
            return .keep
        case (.awaitingRequest, .single):
            return .fail(RPCStatus(.unimplemented, "\(method) takes exactly one request message; a second one arrived"))
        case (.running, .single), (.streaming, .single):
            return .drop  // the handler has its request; bytes after it are not read
        }
    }

    /// The client ended its request; `partialMessage` when bytes of an incomplete message remain.
    mutating func requestEnded(partialMessage: Bool) -> EndDecision {
        if isFinished { return .none }
        if partialMessage {
            return .fail(
                RPCStatus(.internal, "the request ended inside a gRPC message (truncated length-prefixed message)"))
        }
        switch (phase, requests) {
        case (_, .stream):
            return .closeRequests
        case (.awaitingRequest, .single):
            guard keptMessage else {
                return .fail(RPCStatus(.unimplemented, "\(method) needs one request message; the request had none"))
            }
            requestArrived()
            phase = .running
            return .start
        default:
            return .none
        }
    }

    /// The first response message is about to go out (the response head with it).
    mutating func responseStarted() {
        if phase == .running || phase == .awaitingRequest { phase = .streaming }
    }

    /// `now` is at or past the active deadline: true when the call must end DEADLINE_EXCEEDED.
    mutating func deadlinePassed(now: MonotonicInstant) -> Bool {
        guard !isFinished, let deadline, now >= deadline else { return false }
        return true
    }

    /// Ends the call with `code`; nil when it had ended already.
    mutating func finish(_ code: StatusCode) -> Ending? {
        if isFinished { return nil }
        let ending: Ending = phase == .streaming ? .trailers : .trailersOnly
        phase = .finished(code)
        deadline = nil
        return ending
    }

    /// The client reset the stream: true when this ended the call (it had not ended before).
    mutating func cancelled() -> Bool {
        finish(.cancelled) != nil
    }

    /// The request is in: a deadline that only bounded its arrival no longer applies.
    private mutating func requestArrived() {
        if deadlineBoundsRequestOnly {
            deadline = nil
            deadlineBoundsRequestOnly = false
        }
    }
}
