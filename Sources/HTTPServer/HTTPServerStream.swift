import EventLoops

/// What a responder may do with one stream of the server: answer it (head, body, trailers), release the
/// request bytes it has taken, reset it. Confined to the stream's event loop, like the stream.
///
/// A class-bound protocol: a handler holds it as one reference and a witness table, so a call through it costs
/// an indirect call, no box and no copy. `HTTP2Stream` is the server's one conformer; a test may bring another.
public protocol HTTPServerStream: AnyObject {
    /// The loop that owns the stream; touch the stream only there.
    var eventLoop: EventLoop { get }
    /// True once the stream is gone (finished, reset or its connection closed); every later call is ignored.
    var isClosed: Bool { get }
    /// True once a response head was sent.
    var hasResponded: Bool { get }
    /// Response bytes written but not yet sent: how a producer learns to slow down.
    var bufferedBytes: Int { get }

    /// Sends a prepared response head, which must start with ":status", and one field of this response only
    /// (e.g. `x-request-id`) when given, whose value's bytes are copied before this returns. With `endStream`
    /// the head is the whole response (e.g. gRPC Trailers-Only).
    func respond(
        _ head: HeaderBlock, adding extra: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, endStream: Bool)
    /// Queues response body bytes (the array becomes the queue's storage when nothing else is queued).
    func write(_ bytes: [UInt8])
    /// Queues response body bytes produced in place by `body`, which appends to the buffer it is given.
    func write(appending body: (inout [UInt8]) -> Void)
    /// Ends the response after the queued body, with prepared trailers when given.
    func finish(trailers: HeaderBlock?)
    /// The responder is done with `count` received request bytes: they no longer count against the
    /// connection's budget, and their window may be granted back to the client.
    func releaseReceived(_ count: Int)
    /// Releases every received request byte the stream still holds.
    func releaseAllReceived()
    /// Resets the stream (RST_STREAM) with an HTTP/2 error code, e.g. `.cancel`.
    func reset(errorCode: HTTP2ErrorCode)
    /// The stream's request was admitted: its caller passed whatever the responder checks callers with. From
    /// now on its connection is a caller's, and `HTTP2Configuration.unauthenticatedIdleTimeout` no longer applies.
    func admitConnection()
}

extension HTTPServerStream {
    /// Sends the response head. With `endStream` the head is the whole response.
    public func respond(status: Int, fields: [(name: String, value: String)], endStream: Bool) {
        respond(HeaderBlock([(":status", String(status))] + fields), adding: nil, endStream: endStream)
    }

    /// Sends a prepared response head, which must start with ":status".
    public func respond(_ head: HeaderBlock, endStream: Bool) {
        respond(head, adding: nil, endStream: endStream)
    }

    /// Ends the response after the queued body, with trailers when given (none when empty).
    public func finish(trailers: [(name: String, value: String)]?) {
        finish(trailers: trailers.flatMap { $0.isEmpty ? nil : HeaderBlock($0) })
    }
}
