import EventLoops
import GatewayFoundation

/// The request head of an HTTP/2 stream: pseudo-headers apart, then the regular header fields in order.
public struct HTTP2RequestHead: Sendable {
    public var method = ""
    public var scheme = ""
    public var authority = ""
    public var path = ""
    /// The path's index in the responder's `internTable` list when it is there (a known path), else nil.
    public var pathIndex: Int?
    /// Regular header fields (lowercase names, as HTTP/2 requires), in arrival order.
    public var fields: [(name: String, value: String)] = []
    /// The names of the connection's verified client certificate (TLS with a client CA), nil otherwise.
    public var peerCertificate: PeerCertificateIdentity?
    /// When the bytes that opened the stream were read from the socket (one clock reading per read, shared by
    /// the requests it carried); nil when not known.
    public var receivedAt: MonotonicInstant?

    public init() {}

    /// The first value of a header field, by its lowercase name.
    public func value(of name: String) -> String? {
        fields.first(where: { $0.name == name })?.value
    }
}

/// Receives the events of one stream, on the stream's event loop.
public protocol HTTP2StreamDelegate: AnyObject {
    /// A chunk of the request body. The bytes are valid only during the call.
    func stream(_ stream: any HTTPServerStream, received data: UnsafeRawBufferPointer)
    /// The client finished its request (END_STREAM).
    func streamRequestEnded(_ stream: any HTTPServerStream)
    /// Buffered response data fell below the low-water mark: more may be written.
    func streamWritable(_ stream: any HTTPServerStream)
    /// The stream is gone: finished, reset by the client (`errorCode` from RST_STREAM) or the connection closed.
    func streamClosed(_ stream: any HTTPServerStream, errorCode: HTTP2ErrorCode)
}

/// Decides what serves each new request; called on the loop thread that owns the stream.
public protocol HTTP2Responder: Sendable {
    /// A request's headers are complete. Return the delegate for the rest of the stream, after responding
    /// already if the answer is known from the head alone.
    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)?

    /// Strings this responder's requests repeat (its paths, the header names and values it expects): a
    /// request head takes them from here instead of allocating its own.
    var internTable: InternTable { get }
}

extension HTTP2Responder {
    public var internTable: InternTable { InternTable.common }
}

/// One HTTP/2 stream of a server connection, confined to its event loop.
///
/// The response is a head (`respond`), body bytes (`write`) and an end (`finish`, optionally with trailers);
/// body bytes wait here until the peer's flow-control window lets nghttp2 take them, so `bufferedBytes`
/// is how a producer learns to slow down.
public final class HTTP2Stream: HTTPServerStream, Slotted {
    /// The HTTP/2 stream id.
    public let id: Int32
    /// The loop that owns this stream; touch the stream only there.
    public let eventLoop: EventLoop
    /// Receives the stream's events once its head is complete.
    public internal(set) var delegate: (any HTTP2StreamDelegate)?

    /// Strong: the connection drops its streams when they close, so the cycle ends with the stream, and a
    /// stream outliving its connection (held by a finishing handler) stays safe to call (it is closed).
    let connection: ServerConnection
    var head = HTTP2RequestHead()
    var headerBytes = 0
    var headerListTooLarge = false
    /// Request bytes received and not yet released by the delegate (the connection's `ReceiveLedger` counts
    /// them in its total).
    var heldBytes = 0
    /// Where the connection keeps this stream among its open streams (`SlotArray`).
    public var slot = -1

    /// Open, half-closed or closed, with the response's pending sends.
    var state = HTTP2StreamState()
    /// The response head and trailers handed to nghttp2, kept as long as the stream: nghttp2 takes a block's
    /// bytes without copying them (`HeaderBlock`) and reads them when it packs the frame, which it does only
    /// while the stream is open.
    var submittedHead: HeaderBlock?
    var submittedTrailers: HeaderBlock?

    /// True once nghttp2 closed the stream (or its connection closed); every later call is ignored.
    public var isClosed: Bool { state.isClosed }

    init(id: Int32, connection: ServerConnection, eventLoop: EventLoop) {
        self.id = id
        self.connection = connection
        self.eventLoop = eventLoop
        head.peerCertificate = connection.peerCertificate
    }

    /// Response bytes written but not yet taken by nghttp2.
    public var bufferedBytes: Int { state.bufferedBytes }

    /// True once `respond` was called.
    public var hasResponded: Bool { state.hasResponded }

    /// Sends a prepared response head and one field of this response only (e.g. `x-request-id`), without
    /// building a new block for it; the value's bytes are copied before this returns.
    public func respond(
        _ head: HeaderBlock, adding extra: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, endStream: Bool
    ) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        guard state.respond(endStream: endStream) == nil else { return }
        connection.submitResponse(self, head: head, extra: extra, endStream: endStream)
    }

    /// Queues response body bytes.
    public func write(_ bytes: [UInt8]) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        perform(state.write(bytes))
    }

    /// Queues response body bytes produced in place by `body`, which appends to the buffer it is given.
    public func write(appending body: (inout [UInt8]) -> Void) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        perform(state.write(appending: body))
    }

    /// Ends the response after the queued body, with prepared trailers when given.
    public func finish(trailers: HeaderBlock?) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        perform(state.finish(trailers: trailers))
    }

    /// The delegate is done with `count` received request bytes (a whole message handed on, or bytes it
    /// ignores): they no longer count against the connection's budget, and their window may be granted back
    /// to the client. Bytes never released are released when the stream closes.
    public func releaseReceived(_ count: Int) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        guard !isClosed else { return }
        connection.release(self, count: count)
    }

    /// Releases every received byte the stream still holds (see `releaseReceived`).
    public func releaseAllReceived() {
        eventLoop.assertInLoop("an HTTP/2 stream")
        guard !isClosed else { return }
        connection.release(self, count: nil)
    }

    /// Marks the connection as a caller's (`HTTPServerStream.admitConnection`).
    public func admitConnection() {
        eventLoop.assertInLoop("an HTTP/2 stream")
        guard !isClosed else { return }
        connection.callAdmitted()
    }

    /// Resets the stream (RST_STREAM) with an HTTP/2 error code, e.g. `.cancel`.
    public func reset(errorCode: HTTP2ErrorCode) {
        eventLoop.assertInLoop("an HTTP/2 stream")
        guard !isClosed else { return }
        connection.resetStream(self, errorCode: errorCode)
    }

    /// Resumes nghttp2's data source when it was parked, and asks for a flush; a refused write does neither.
    private func perform(_ answer: Result<HTTP2StreamState.Queued, HTTP2StreamState.Refusal>) {
        guard case .success(let queued) = answer else { return }
        if queued == .resumeAndFlush { connection.resumeData(self) }
        connection.needsFlush()
    }
}
