import EventLoops

/// Resets a stream with NO_ERROR once its complete answer has been handed to the connection (RFC 9113 §8.1:
/// the server needs no more of the request, and the client may stop sending it).
///
/// Not at once: nghttp2 drops a stream's queued HEADERS when a RST_STREAM is submitted before they are
/// serialised. The connection serialises at the end of the loop iteration, and iteration-end targets run in
/// the order they were queued, so this one, queued after the answer, runs after the connection's flush.
/// (Only when the connection's write buffer is full do the HEADERS stay queued: the client then sees the
/// reset alone, which still ends the stream.)
final class ResetAfterAnswer: IterationEndTarget {
    var iterationEndQueued = false
    private let stream: any HTTPServerStream

    /// Queues the reset of `stream`, which has just been answered with END_STREAM.
    static func schedule(_ stream: any HTTPServerStream) {
        stream.eventLoop.atIterationEnd(ResetAfterAnswer(stream))
    }

    private init(_ stream: any HTTPServerStream) { self.stream = stream }

    func iterationEnded() { stream.reset(errorCode: .noError) }
}
