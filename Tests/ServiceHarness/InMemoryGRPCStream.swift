import EventLoops
import GRPC
import GatewayFoundation
import HTTPServer
import ProtoCodec

/// One call's HTTP/2 stream in memory, with a gRPC client's view of it: the request head and the framed request
/// go to the server's responder as a connection hands them over; the response head, messages and trailers it
/// writes are read back as a client reads them, and every framing rule is checked on the way. Confined to its
/// event loop, like a connection's stream.
final class InMemoryGRPCStream: HTTPServerStream {
    let eventLoop: EventLoop
    private(set) var isClosed = false
    private(set) var hasResponded = false
    /// Nothing waits for a window here, until the client has read `maxStreamMessages` messages: from then on
    /// everything written stays unread (above any high-water mark), as for a client that stopped reading.
    var bufferedBytes: Int { responses.count < ServiceHarness.maxStreamMessages ? 0 : Int.max }

    private var delegate: (any HTTP2StreamDelegate)?
    private var head: [(name: String, value: String)] = []
    /// Response body bytes not yet read as a whole message.
    private var unread: [UInt8] = []
    private var responses: [[UInt8]] = []
    private var cancelQueued = false
    private var answered: ((ServiceHarness.Outcome) -> Void)?

    private init(eventLoop: EventLoop, answered: @escaping (ServiceHarness.Outcome) -> Void) {
        self.eventLoop = eventLoop
        self.answered = answered
    }

    /// Starts a call of `method` with `request` (serialized) on `responder`, on `loop`'s thread; `answered` hears
    /// what the client read once the stream ends (or the client cancelled it).
    static func start(
        _ method: String, request: [UInt8], responder: any HTTP2Responder, on loop: EventLoop,
        answered: @escaping (ServiceHarness.Outcome) -> Void
    ) {
        let stream = InMemoryGRPCStream(eventLoop: loop, answered: answered)
        var head = HTTP2RequestHead()
        head.method = "POST"
        head.scheme = "http"
        head.authority = "harness"
        head.path = method
        var path = method
        head.pathIndex = path.withUTF8 { responder.internTable.lookup($0)?.index }
        head.fields = [("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", "2S")]
        guard let delegate = responder.streamStarted(stream, head: head) else {
            precondition(stream.isClosed, "the responder neither answered nor took the stream")
            return
        }
        stream.delegate = delegate
        // One DATA frame with the whole message, then END_STREAM, as a client sends a unary request.
        let length = UInt32(request.count)
        let framed =
            [0, UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
            + request
        framed.withUnsafeBytes { delegate.stream(stream, received: $0) }
        if !stream.isClosed { delegate.streamRequestEnded(stream) }
    }

    // MARK: HTTPServerStream

    func respond(
        _ head: HeaderBlock, adding extra: (name: StaticString, value: UnsafeBufferPointer<UInt8>)?, endStream: Bool
    ) {
        guard !isClosed else { return }
        precondition(!hasResponded, "a second response head")
        hasResponded = true
        self.head = head.fieldList
        if let extra { self.head.append(("\(extra.name)", String(decoding: extra.value, as: UTF8.self))) }
        if endStream { end(trailers: self.head) }  // Trailers-Only
    }

    func write(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        precondition(hasResponded, "response bytes before the response head")
        unread += bytes
        readMessages()
    }

    func write(appending body: (inout [UInt8]) -> Void) {
        var bytes: [UInt8] = []
        body(&bytes)
        write(bytes)
    }

    func finish(trailers: HeaderBlock?) {
        guard !isClosed else { return }
        precondition(hasResponded, "trailers without a response head")
        end(trailers: trailers?.fieldList ?? [])
    }

    func releaseReceived(_ count: Int) {}
    func releaseAllReceived() {}
    func admitConnection() {}

    func reset(errorCode: HTTP2ErrorCode) {
        guard !isClosed else { return }
        isClosed = true
        // What a gRPC client makes of a stream the server reset (a bug here: the server ends calls with a status).
        deliver(RPCStatus(.internal, "the server reset the stream (HTTP/2 error \(errorCode.rawValue))"))
        closedLater(errorCode)
    }

    // MARK: The client's side

    /// Takes every whole message off the unread bytes, checking its prefix (uncompressed), and stops reading
    /// once `maxStreamMessages` have arrived: the client then cancels the call, on a later loop iteration (a
    /// reset arrives from the socket, never inside the server's write).
    private func readMessages() {
        while unread.count >= 5 {
            precondition(unread[0] == 0, "a message flagged compressed, though the client asked for no compression")
            let length = unread[1..<5].reduce(0) { $0 << 8 | Int($1) }
            guard unread.count >= 5 + length else { return }
            responses.append(Array(unread[5..<5 + length]))
            unread.removeFirst(5 + length)
        }
        guard responses.count >= ServiceHarness.maxStreamMessages, !cancelQueued else { return }
        cancelQueued = true
        LoopBound(self, on: eventLoop).execute { stream in
            guard !stream.isClosed else { return }
            stream.isClosed = true
            stream.delegate?.streamClosed(stream, errorCode: .cancel)
            stream.delegate = nil
            stream.deliver(RPCStatus(.cancelled, "the harness stopped reading"))
        }
    }

    /// The response ended with `trailers` (the head of a Trailers-Only answer): the client checks the head and
    /// reads the status; the stream closes as nghttp2 closes it once its last frame is out, a moment later.
    private func end(trailers: [(name: String, value: String)]) {
        precondition(
            head.first { $0.name == ":status" }?.value == "200"
                && head.first { $0.name == "content-type" }?.value == "application/grpc",
            "a gRPC response head without :status 200 and content-type application/grpc: \(head)")
        precondition(unread.isEmpty, "the response ended inside a message (\(unread.count) bytes unread)")
        isClosed = true
        deliver(StatusTrailerReader.status(of: trailers))
        closedLater(.noError)
    }

    /// Tells the delegate the stream is gone on a later loop iteration, as a connection does once the stream's
    /// last frame is out (never inside the delegate's own call).
    /// The stream then lets go of its delegate, as a connection drops a closed stream (the call holds its stream,
    /// so keeping the delegate would keep both, and the call's task, alive for ever).
    private func closedLater(_ errorCode: HTTP2ErrorCode) {
        guard delegate != nil else { return }
        LoopBound(self, on: eventLoop).execute { stream in
            stream.delegate?.streamClosed(stream, errorCode: errorCode)
            stream.delegate = nil
        }
    }

    private func deliver(_ status: RPCStatus) {
        let answered = self.answered
        self.answered = nil
        answered?(ServiceHarness.Outcome(status: status, responses: responses))
    }
}

/// A call's status as a gRPC client reads it from the trailers: `grpc-status`, `grpc-message` (percent-decoded)
/// and the details of `grpc-status-details-bin` (google.rpc.Status with ErrorInfo, RetryInfo, BadRequest).
enum StatusTrailerReader {
    static func status(of trailers: [(name: String, value: String)]) -> RPCStatus {
        func value(_ name: String) -> String? { trailers.first { $0.name == name }?.value }
        guard let text = value("grpc-status") else { return RPCStatus(.unknown, "the trailers carry no grpc-status") }
        let code = Int(text).flatMap(StatusCode.init(rawValue:)) ?? .unknown
        var status = RPCStatus(code, value("grpc-message").map(StatusMessageEncoding.decode) ?? "")
        if let encoded = value("grpc-status-details-bin") {
            guard let bytes = Base64.decode(encoded, variant: .standardUnpadded),
                let message = try? GoogleRPCStatus(serializedBytes: bytes)
            else {
                return RPCStatus(.unknown, "grpc-status-details-bin does not decode as google.rpc.Status")
            }
            precondition(
                message.code == Int32(code.rawValue) && message.message == status.message,
                "grpc-status-details-bin disagrees with grpc-status and grpc-message")
            status.details = details(of: message)
        }
        return status
    }

    private static func details(of message: GoogleRPCStatus) -> ErrorDetails {
        var details = ErrorDetails()
        for detail in message.details {
            switch detail.typeUrl {
            case "type.googleapis.com/google.rpc.ErrorInfo":
                if let info = try? ErrorInfo(serializedBytes: detail.value) {
                    details.info = ErrorDetails.Info(reason: info.reason, domain: info.domain, metadata: info.metadata)
                }
            case "type.googleapis.com/google.rpc.RetryInfo":
                if let delay = (try? RetryInfo(serializedBytes: detail.value))?.retryDelay {
                    details.retryDelayMilliseconds = delay.seconds * 1000 + Int64(delay.nanos / 1_000_000)
                }
            case "type.googleapis.com/google.rpc.BadRequest":
                if let request = try? BadRequest(serializedBytes: detail.value) {
                    details.fieldViolations = request.fieldViolations.map {
                        FieldViolation(field: $0.field, description: $0.description)
                    }
                }
            default:
                break
            }
        }
        return details
    }
}
