import GatewayFoundation

/// The life of one server stream from its request head on (RFC 9113 §5.1): open, half-closed on either side,
/// then closed, with the response's pending sends (whether the head went out, the body bytes nghttp2 has not
/// taken yet, the trailers, whether nghttp2's data source is parked) as the payload of the states that have them.
///
/// Pure: `HTTP2Stream` and `ServerConnection` ask it what each event means and perform the answer (nghttp2
/// calls, delegate calls). An event the state does not allow (a write after `finish`, anything after the close)
/// is answered with a `Refusal`, never a trap: a handler may act on a stream its peer has just reset.
///
/// "Local" ends when the response does (`finish`, or a head sent with END_STREAM), not when nghttp2 has sent its
/// last frame: from then on nothing more may be queued, and what is queued still drains. "Closed" is nghttp2's
/// close of the stream (or the connection's), after which every call is ignored.
///
/// Every mutation consumes `self` and reassigns it, so the payload (and the byte queue's storage) stays unique
/// and is changed in place: a DATA frame copies no queue.
enum HTTP2StreamState {
    /// Neither side has ended: more request DATA may come, the response may still grow.
    case open(Responding)
    /// The client ended its request (END_STREAM received); the response goes on.
    case halfClosedRemote(Responding)
    /// The response ended; what it queued drains; the request goes on.
    case halfClosedLocal(Finishing)
    /// Both sides ended; what the response queued drains until nghttp2 closes the stream.
    case closing(Finishing)
    /// nghttp2 closed the stream, or its connection closed.
    case closed

    /// A response that has not ended.
    struct Responding {
        /// Whether the response head was submitted; body bytes are accepted only after it.
        var headSent = false
        var body = PendingBody()
    }

    /// A response that has ended: its remaining body, then its trailers (or END_STREAM on the last DATA).
    struct Finishing {
        var body = PendingBody()
        var trailers: HeaderBlock?
    }

    /// Response body bytes nghttp2 has not taken yet.
    struct PendingBody {
        var queue = ByteQueue()
        /// nghttp2 asked for bytes when none were queued and was told to wait (`NGHTTP2_ERR_DEFERRED`): the
        /// next write or the end of the response must resume its data source.
        var deferred = false
    }

    /// Why an event was not allowed in the state it met.
    enum Refusal: Error, Equatable {
        /// The stream is closed.
        case closed
        /// A second response head.
        case alreadyResponded
        /// Body or end of a response whose head was not sent.
        case noResponseHead
        /// Body or end after the response ended.
        case responseEnded
        /// The request's end, a second time.
        case requestEnded
    }

    /// What the connection does after a response body write or end was accepted.
    enum Queued: Equatable {
        /// Nothing beyond a flush: nghttp2's data source is active and will ask for the bytes.
        case flush
        /// The data source was parked (deferred): resume it, then flush.
        case resumeAndFlush
    }

    /// nghttp2's data source's answer for one DATA frame (`nextFrame`).
    enum Frame {
        /// `count` body bytes (copied into the buffer, or, when `noCopy`, to be moved by `moveBody` when the frame
        /// is sent); more will follow. `drainedFrom` is the queue's size before the frame.
        case data(count: Int, noCopy: Bool, drainedFrom: Int)
        /// The body's last `count` bytes (maybe none): EOF, with the trailers to submit when there are any.
        case last(count: Int, noCopy: Bool, trailers: HeaderBlock?)
        /// Nothing queued and the response goes on: the data source parks until a write resumes it.
        case deferred
        /// The stream cannot send DATA (closed, or no head).
        case refused(Refusal)
    }

    init() { self = .open(Responding()) }

    /// True once the stream is closed.
    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }

    /// True once the response head was submitted.
    var hasResponded: Bool {
        switch self {
        case .open(let responding), .halfClosedRemote(let responding): responding.headSent
        case .halfClosedLocal, .closing, .closed: true
        }
    }

    /// True once the response ended (or the stream closed): nothing more may be queued.
    var responseEnded: Bool {
        switch self {
        case .open, .halfClosedRemote: false
        case .halfClosedLocal, .closing, .closed: true
        }
    }

    /// Response bytes queued and not yet taken by nghttp2.
    var bufferedBytes: Int {
        switch self {
        case .open(let responding), .halfClosedRemote(let responding): responding.body.queue.count
        case .halfClosedLocal(let finishing), .closing(let finishing): finishing.body.queue.count
        case .closed: 0
        }
    }

    // MARK: The response (the application's side)

    /// The response head is being submitted; with `endStream` it is the whole response. Nil when allowed.
    mutating func respond(endStream: Bool) -> Refusal? {
        switch consume self {
        case .open(var responding) where !responding.headSent:
            responding.headSent = true
            self = endStream ? .halfClosedLocal(Finishing()) : .open(responding)
            return nil
        case .halfClosedRemote(var responding) where !responding.headSent:
            responding.headSent = true
            self = endStream ? .closing(Finishing()) : .halfClosedRemote(responding)
            return nil
        case .closed:
            self = .closed
            return .closed
        case let other:
            self = other
            return .alreadyResponded
        }
    }

    /// Queues response body bytes (the array becomes the queue's storage when nothing else is queued).
    mutating func write(_ bytes: [UInt8]) -> Result<Queued, Refusal> {
        writeBody { $0.append(bytes) }
    }

    /// Queues response body bytes produced in place by `body`.
    mutating func write(appending body: (inout [UInt8]) -> Void) -> Result<Queued, Refusal> {
        writeBody { $0.append(body) }
    }

    private mutating func writeBody(_ append: (inout ByteQueue) -> Void) -> Result<Queued, Refusal> {
        switch consume self {
        case .open(var responding) where responding.headSent:
            append(&responding.body.queue)
            let queued = responding.body.resume()
            self = .open(responding)
            return .success(queued)
        case .halfClosedRemote(var responding) where responding.headSent:
            append(&responding.body.queue)
            let queued = responding.body.resume()
            self = .halfClosedRemote(responding)
            return .success(queued)
        case let other:
            let refusal = other.refusalOfBody
            self = other
            return .failure(refusal)
        }
    }

    /// Ends the response after its queued body, with trailers when given.
    mutating func finish(trailers: HeaderBlock?) -> Result<Queued, Refusal> {
        switch consume self {
        case .open(var responding) where responding.headSent:
            let queued = responding.body.resume()
            self = .halfClosedLocal(Finishing(body: responding.body, trailers: trailers))
            return .success(queued)
        case .halfClosedRemote(var responding) where responding.headSent:
            let queued = responding.body.resume()
            self = .closing(Finishing(body: responding.body, trailers: trailers))
            return .success(queued)
        case let other:
            let refusal = other.refusalOfBody
            self = other
            return .failure(refusal)
        }
    }

    /// Why body bytes or an end are refused here (only asked of states that refuse them).
    private var refusalOfBody: Refusal {
        switch self {
        case .open, .halfClosedRemote: .noResponseHead
        case .halfClosedLocal, .closing: .responseEnded
        case .closed: .closed
        }
    }

    // MARK: The request (the peer's side)

    /// The client ended its request (END_STREAM on its last DATA, HEADERS or trailers). Nil when allowed.
    mutating func requestEnded() -> Refusal? {
        switch consume self {
        case .open(let responding):
            self = .halfClosedRemote(responding)
            return nil
        case .halfClosedLocal(let finishing):
            self = .closing(finishing)
            return nil
        case .halfClosedRemote(let responding):
            self = .halfClosedRemote(responding)
            return .requestEnded
        case .closing(let finishing):
            self = .closing(finishing)
            return .requestEnded
        case .closed:
            self = .closed
            return .closed
        }
    }

    // MARK: nghttp2's data source

    /// Sizes the next DATA frame of at most `capacity` bytes. Below `noCopyThreshold` bytes they are copied
    /// into `buffer` (and leave the queue) now; at or above it the frame is only sized, and `moveBody` moves
    /// them when nghttp2 sends it. Parks the data source when nothing is queued and the response goes on.
    mutating func nextFrame(capacity: Int, noCopyThreshold: Int, into buffer: UnsafeMutableRawPointer)
        -> Frame
    {
        switch consume self {
        case .open(var responding) where responding.headSent:
            let frame = responding.body.nextFrame(capacity, noCopyThreshold, buffer, ended: false, trailers: nil)
            self = .open(responding)
            return frame
        case .halfClosedRemote(var responding) where responding.headSent:
            let frame = responding.body.nextFrame(capacity, noCopyThreshold, buffer, ended: false, trailers: nil)
            self = .halfClosedRemote(responding)
            return frame
        case .halfClosedLocal(var finishing):
            let frame = finishing.body.nextFrame(
                capacity, noCopyThreshold, buffer, ended: true, trailers: finishing.trailers)
            self = .halfClosedLocal(finishing)
            return frame
        case .closing(var finishing):
            let frame = finishing.body.nextFrame(
                capacity, noCopyThreshold, buffer, ended: true, trailers: finishing.trailers)
            self = .closing(finishing)
            return frame
        case let other:
            let refusal = other.refusalOfBody
            self = other
            return .refused(refusal)
        }
    }

    /// Moves `count` body bytes sized by a NO_COPY `nextFrame` to the back of `outbound`; false (moving nothing)
    /// when fewer are queued.
    mutating func moveBody(_ count: Int, to outbound: inout ByteQueue) -> Bool {
        switch consume self {
        case .open(var responding):
            let moved = responding.body.move(count, to: &outbound)
            self = .open(responding)
            return moved
        case .halfClosedRemote(var responding):
            let moved = responding.body.move(count, to: &outbound)
            self = .halfClosedRemote(responding)
            return moved
        case .halfClosedLocal(var finishing):
            let moved = finishing.body.move(count, to: &outbound)
            self = .halfClosedLocal(finishing)
            return moved
        case .closing(var finishing):
            let moved = finishing.body.move(count, to: &outbound)
            self = .closing(finishing)
            return moved
        case .closed:
            self = .closed
            return count == 0
        }
    }

    // MARK: The end

    /// nghttp2 closed the stream (or the connection closed): what was queued is dropped. Nil when the stream
    /// was open until now (its delegate is told once).
    mutating func close() -> Refusal? {
        if isClosed { return .closed }
        self = .closed
        return nil
    }
}

extension HTTP2StreamState.PendingBody {
    /// Un-parks the data source, if it was parked: what the connection does after bytes were queued.
    fileprivate mutating func resume() -> HTTP2StreamState.Queued {
        guard deferred else { return .flush }
        deferred = false
        return .resumeAndFlush
    }

    fileprivate mutating func nextFrame(
        _ capacity: Int, _ noCopyThreshold: Int, _ buffer: UnsafeMutableRawPointer, ended: Bool,
        trailers: HeaderBlock?
    ) -> HTTP2StreamState.Frame {
        let before = queue.count
        let noCopy = min(capacity, before) >= noCopyThreshold
        let count = noCopy ? min(capacity, before) : queue.take(into: buffer, capacity: capacity)
        if ended && before == count { return .last(count: count, noCopy: noCopy, trailers: trailers) }
        if count == 0 {
            deferred = true
            return .deferred
        }
        return .data(count: count, noCopy: noCopy, drainedFrom: before)
    }

    fileprivate mutating func move(_ count: Int, to outbound: inout ByteQueue) -> Bool {
        guard count >= 0, queue.count >= count else { return false }
        queue.move(count, to: &outbound)
        return true
    }
}
