internal import CLinux
import EventLoops
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 connection serving whole requests to an `HTTPRequestHandler`, one at a time (keep-alive,
/// no pipelining in parallel). For the admin endpoint and for TLS clients that do not speak h2 (Apple's
/// Python library, via `requests`).
///
/// After an answer that closes the connection (any refusal, `Connection: close`, HTTP/1.0, a graceful
/// close) nothing more is parsed: bytes that follow are read and dropped until the answer is written, so
/// none of them can become a second request.
final class HTTP1Connection: LoopConnection, IterationEndTarget {
    var iterationEndQueued = false
    let io: any ByteStream
    var fd: Int32 { io.fd }
    private unowned let owner: any ConnectionOwner
    private let handler: any HTTPRequestHandler
    private var input: [UInt8] = []
    private var parser: HTTP1RequestParser
    private var output = ByteQueue()
    private var busy = false
    private var closeAfterWrite = false
    private var draining = false
    private var closed = false
    private var wantsWritable = false
    /// What requests may look like and how long the client may take (the server's configuration).
    private let limits: HTTP1Limits
    /// The response being written answers a HEAD request: no body bytes.
    private var answeringHead = false
    /// The one timer of the connection: the head deadline while a request is read, the idle deadline between.
    private var deadlineTimer: IOLoopTimer?

    /// A connection of `owner`'s server, with the server's limits.
    convenience init(io: any ByteStream, owner: ServerLoop, handler: any HTTPRequestHandler) {
        self.init(io: io, owner: owner as any ConnectionOwner, handler: handler, limits: owner.configuration.http1)
    }

    init(io: any ByteStream, owner: any ConnectionOwner, handler: any HTTPRequestHandler, limits: HTTP1Limits) {
        self.io = io
        self.owner = owner
        self.handler = handler
        self.limits = limits
        self.parser = HTTP1RequestParser(maxHeadBytes: limits.maxHeadBytes, maxBodyBytes: limits.maxBodyBytes)
        owner.eventLoop.replaceSource(fd: io.fd, with: self)
        owner.eventLoop.rewatch(fd: io.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
        // A new connection must send its request head in time, as a slow one must finish it.
        armDeadline(limits.headerTimeout)
    }

    /// Closes the connection when `timeout` passes with no progress that re-arms it. nil = no deadline.
    private func armDeadline(_ timeout: Duration?) {
        if let deadlineTimer { owner.eventLoop.cancelTimer(deadlineTimer) }
        deadlineTimer = nil
        guard let timeout, timeout > .zero, !closed else { return }
        deadlineTimer = owner.eventLoop.scheduleTimer(after: timeout) {
            [unowned self] in
            self.deadlineTimer = nil  // unowned: close() cancels the timer
            if !self.busy { self.close(abort: false) }
        }
    }

    func handle(events: UInt32) {
        if events & EPOLLOUT.rawValue != 0 { flush() }
        guard !closed, events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0
        else { return }
        let buffer = owner.readBuffer
        reading: while true {
            switch io.read(into: buffer) {
            case .bytes(let count):
                // Once the connection's last answer is decided, what follows is no request: it is dropped.
                if !closeAfterWrite {
                    // The first byte of a request after an idle spell: the head must now arrive in time.
                    if input.isEmpty && !busy && count > 0 {
                        armDeadline(limits.headerTimeout)
                    }
                    input.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                    // While a request is being handled, pipelined bytes wait here, but never more than one
                    // largest request: a client that keeps sending is cut off.
                    if input.count > limits.maxHeadBytes + limits.maxBodyBytes + 4 {
                        close(abort: true)
                        return
                    }
                }
                if count < buffer.count && !io.hasBufferedInput { break reading }
            case .wouldBlock:
                break reading
            case .closed, .failed:
                close(abort: false)
                return
            }
        }
        processInput()
    }

    private func processInput() {
        // After an answer that closes the connection nothing is parsed, even while that answer is still
        // being written (a client that does not read must not get its next bytes taken as a request).
        guard !busy, !closed, !closeAfterWrite else { return }
        switch parser.parse(&input) {
        case .incomplete:
            return
        case .failure(let status, let reason):
            closeAfterWrite = true
            answeringHead = false
            input = []
            send(
                HTTPResponse(
                    status: status, headers: [("content-type", "text/plain")], body: Array((reason + "\n").utf8)))
        case .request(let request, _)
        where !limits.allowedMethods.isEmpty && !limits.allowedMethods.contains(request.method):
            closeAfterWrite = true
            answeringHead = false
            input = []
            let allow = limits.allowedMethods.sorted().joined(separator: ", ")
            send(
                HTTPResponse(
                    status: 405, headers: [("allow", allow), ("content-type", "text/plain")],
                    body: Array("method not allowed: \(allow) only\n".utf8)))
        case .request(let request, let keepAlive):
            busy = true
            answeringHead = request.method == "HEAD"
            armDeadline(nil)  // the handler's time is not the client's
            closeAfterWrite = !keepAlive || draining
            if closeAfterWrite { input = [] }
            let handler = self.handler
            let outlet = LoopBound(self, on: owner.eventLoop)
            Task {
                let response = await handler.handle(request)
                outlet.execute { $0.deliver(response) }
            }
        }
    }

    private func deliver(_ response: HTTPResponse) {
        guard !closed else { return }
        switch response.delivery {
        case .resetConnection:
            close(abort: true)
        case .normal:
            send(response)
        case .slowBody(let chunks, let interval):
            var head = response
            head.body = []
            output.append(Self.encodeHead(head, contentLength: response.body.count, close: closeAfterWrite))
            flush()
            if answeringHead {
                responseDone()
                return
            }
            sendSlowly(response.body[...], pieces: max(1, chunks), interval: interval)
        }
    }

    private func sendSlowly(_ rest: ArraySlice<UInt8>, pieces: Int, interval: Duration) {
        guard !closed else { return }
        let size = max(1, (rest.count + pieces - 1) / pieces)
        output.append(Array(rest.prefix(size)))
        flush()
        let remaining = rest.dropFirst(size)
        if remaining.isEmpty {
            responseDone()
        } else {
            _ = owner.eventLoop.scheduleTimer(after: interval) { [self] in
                self.sendSlowly(remaining, pieces: max(1, pieces - 1), interval: interval)
            }
        }
    }

    private func send(_ response: HTTPResponse) {
        output.append(Self.encodeHead(response, contentLength: response.body.count, close: closeAfterWrite))
        if !answeringHead { output.append(response.body) }  // RFC 9110 §9.3.2: HEAD has no body
        flush()
        responseDone()
    }

    private func responseDone() {
        busy = false
        if closeAfterWrite {
            // A client that does not read its last answer is let go after the idle deadline.
            if output.isEmpty { close(abort: false) } else { armDeadline(limits.idleTimeout) }
            return
        }
        // Between requests the idle deadline runs; a request already (partly) buffered is on the head deadline.
        armDeadline(input.isEmpty ? limits.idleTimeout : limits.headerTimeout)
        processInput()  // a pipelined request may already be buffered
    }

    static func encodeHead(_ response: HTTPResponse, contentLength: Int, close: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
        for (name, value) in response.headers where name != "content-length" && name != "connection" {
            head += "\(name): \(value)\r\n"
        }
        head += "content-length: \(contentLength)\r\n"
        if close { head += "connection: close\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    func iterationEnded() { flush() }

    func flush() {
        guard !closed else { return }
        while !output.isEmpty {
            switch output.withBytes({ io.write($0) }) {
            case .bytes(let count):
                output.consume(count)
            case .wouldBlock:
                setWantsWritable(true)
                return
            case .closed, .failed:
                close(abort: false)
                return
            }
        }
        setWantsWritable(false)
        if closeAfterWrite && !busy { close(abort: false) }
    }

    private func setWantsWritable(_ wants: Bool) {
        guard wants != wantsWritable, !closed else { return }
        wantsWritable = wants
        let base = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        if !owner.eventLoop.rewatch(fd: fd, events: wants ? base | EPOLLOUT.rawValue : base) { close(abort: true) }
    }

    func beginGracefulClose() {
        draining = true
        if !busy && output.isEmpty { close(abort: false) } else { closeAfterWrite = true }
    }

    func closeNow() { close(abort: false) }

    private func close(abort: Bool) {
        guard !closed else { return }
        closed = true
        if let deadlineTimer { owner.eventLoop.cancelTimer(deadlineTimer) }
        deadlineTimer = nil
        owner.eventLoop.unwatch(fd: fd)
        io.close(abort: abort)
        owner.connectionClosed(self)
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 505: "HTTP Version Not Supported"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
