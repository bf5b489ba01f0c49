import EventLoops
import GatewayFoundation

/// Serves HTTP/2 streams with an `HTTPRequestHandler`: collects the request body, runs the handler as a
/// task, and writes its response back on the stream's loop.
///
/// The bounds of an HTTP/1.1 connection of the same server hold here too: a body over `maxBodyBytes` is
/// refused with 413 as soon as it grows past it, and a request that has not ended `requestTimeout` after its
/// head is answered 408. Either answer is followed by RST_STREAM NO_ERROR (RFC 9113 §8.1: the client may
/// stop sending), so the stream frees its slot at once.
public struct HTTPRequestResponder: HTTP2Responder {
    let handler: any HTTPRequestHandler
    let maxBodyBytes: Int
    let requestTimeout: Duration?

    /// `requestTimeout`: how long after its head a request may take to end; nil = no deadline.
    public init(handler: any HTTPRequestHandler, maxBodyBytes: Int = 8 * 1024 * 1024, requestTimeout: Duration? = nil) {
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
        self.requestTimeout = requestTimeout
    }

    public func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? {
        let call = WholeRequestCall(head: head, handler: handler, maxBodyBytes: maxBodyBytes)
        if let requestTimeout { call.startDeadline(requestTimeout, on: stream) }
        return call
    }
}

/// One request/response exchange on an HTTP/2 stream.
final class WholeRequestCall: HTTP2StreamDelegate {
    private var request: HTTPRequest
    private let handler: any HTTPRequestHandler
    private let maxBodyBytes: Int
    private var done = false
    private var timer: IOLoopTimer?
    /// Runs from the head until the request ends.
    private var deadline: IOLoopTimer?

    init(head: HTTP2RequestHead, handler: any HTTPRequestHandler, maxBodyBytes: Int) {
        var headers = head.fields
        if !head.authority.isEmpty { headers.append(("host", head.authority)) }
        self.request = HTTPRequest(method: head.method, target: head.path, headers: headers)
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
    }

    func stream(_ stream: any HTTPServerStream, received data: UnsafeRawBufferPointer) {
        guard !done else {
            stream.releaseAllReceived()  // ignored bytes hold no budget
            return
        }
        if request.body.count + data.count > maxBodyBytes {
            end(refusing: 413, on: stream)
            return
        }
        request.body.append(contentsOf: data)
    }

    func streamRequestEnded(_ stream: any HTTPServerStream) {
        guard !done else { return }
        cancelDeadline(on: stream)  // the handler's time is not the client's
        stream.releaseAllReceived()  // the body goes to the handler now
        let handler = self.handler
        let request = self.request
        let call = LoopBound(self, on: stream.eventLoop)
        let target = LoopBound(stream, on: stream.eventLoop)
        Task {
            let response = await handler.handle(request)
            call.execute { $0.deliver(response, on: target.value) }
        }
    }

    func streamWritable(_ stream: any HTTPServerStream) {}

    func streamClosed(_ stream: any HTTPServerStream, errorCode: HTTP2ErrorCode) {
        done = true
        if let timer { stream.eventLoop.cancelTimer(timer) }
        cancelDeadline(on: stream)
    }

    /// Answers 408 unless the request has ended within `timeout` (the stream's close or end cancels it).
    func startDeadline(_ timeout: Duration, on stream: any HTTPServerStream) {
        deadline = stream.eventLoop.scheduleTimer(after: timeout) { [self] in
            self.deadline = nil
            self.end(refusing: 408, on: stream)
        }
    }

    private func cancelDeadline(on stream: any HTTPServerStream) {
        if let deadline { stream.eventLoop.cancelTimer(deadline) }
        deadline = nil
    }

    /// Refuses the request (its body so far is dropped) with a bodiless answer, then RST_STREAM NO_ERROR: the
    /// answer is complete, the rest of the request unwanted.
    private func end(refusing status: Int, on stream: any HTTPServerStream) {
        guard !done else { return }
        done = true
        cancelDeadline(on: stream)
        request.body = []
        stream.releaseAllReceived()
        stream.respond(status: status, fields: [("content-length", "0")], endStream: true)
        ResetAfterAnswer.schedule(stream)
    }

    private func deliver(_ response: HTTPResponse, on stream: any HTTPServerStream) {
        guard !done else { return }
        let fields =
            response.headers.filter { $0.name != "content-length" && $0.name != "connection" }
            + [("content-length", String(response.body.count))]
        switch response.delivery {
        case .resetConnection:
            done = true
            stream.reset(errorCode: .internalError)  // the closest HTTP/2 has to a reset connection
        case .normal:
            done = true
            stream.respond(status: response.status, fields: fields, endStream: response.body.isEmpty)
            if !response.body.isEmpty {
                stream.write(response.body)
                stream.finish(trailers: nil as HeaderBlock?)
            }
        case .slowBody(let chunks, let interval):
            stream.respond(status: response.status, fields: fields, endStream: false)
            sendSlowly(response.body[...], pieces: max(1, chunks), interval: interval, on: stream)
        }
    }

    private func sendSlowly(_ rest: ArraySlice<UInt8>, pieces: Int, interval: Duration, on stream: any HTTPServerStream)
    {
        guard !stream.isClosed else { return }
        let size = max(1, (rest.count + pieces - 1) / pieces)
        stream.write(Array(rest.prefix(size)))
        let remaining = rest.dropFirst(size)
        if remaining.isEmpty {
            done = true
            stream.finish(trailers: nil as HeaderBlock?)
            return
        }
        timer = stream.eventLoop.scheduleTimer(after: interval) { [self] in
            self.sendSlowly(remaining, pieces: max(1, pieces - 1), interval: interval, on: stream)
        }
    }
}
