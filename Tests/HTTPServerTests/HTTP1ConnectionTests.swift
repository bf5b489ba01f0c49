import Dispatch
import EventLoops
import GatewayFoundation
import TestSupport
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// An `HTTP1Connection` on a real event loop over one end of a socket pair, the test's blocking client on
/// the other (its reads on a thread of their own, `offPool`: the handler's task needs the cooperative pool): after
/// any answer that closes the connection, no byte that followed becomes a request.
@Suite struct HTTP1ConnectionTests {
    /// Request-smuggling shapes: each hides a second request ("/smuggled") that a parser framing the bytes
    /// otherwise would see. Exactly one answer (400, connection: close), then the connection closes.
    @Test(arguments: [
        "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: x\r\nX: y\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /a HTTP/1.1\r\nHost: x\r\nX: y\r\n Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
    ])
    func aSmugglingShapeGetsOneRefusalAndNothingAfterIt(head: String) async throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.send(head + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let exchange = await rig.readUntilClosed()
        let closed = exchange.closed
        #expect(closed, "the connection stayed open after a refusal")
        let answers = try exchange.responses()
        #expect(answers.map(\.status) == [400])
        #expect(answers.first?.head.contains("connection: close") == true)
        let echoed = String(decoding: exchange.bytes, as: UTF8.self).contains("smuggled")
        #expect(!echoed)
        #expect(rig.handled() == [])
    }

    /// Honest requests sent back to back are all answered, in order; a refusal among them ends the
    /// connection there.
    @Test func pipelinedRequestsAreAnsweredInOrderUntilARefusal() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.send(
            "GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                + "GET /three HTTP/1.1\r\nHost: x\r\n\r\nGET /four HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\nz"
                + "GET /five HTTP/1.1\r\nHost: x\r\n\r\n")
        let exchange = await rig.readUntilClosed()
        let closed = exchange.closed
        #expect(closed)
        let answers = try exchange.responses()
        #expect(answers.map(\.status) == [200, 200, 200, 400])
        #expect(answers.prefix(3).map { String(decoding: $0.body, as: UTF8.self) } == ["/one", "/two abc", "/three"])
        #expect(rig.handled() == ["/one", "/two", "/three"])
    }

    /// An answer that closes the connection (`Connection: close`) is still being written when the client
    /// sends another request: that request is never read as one.
    @Test func nothingIsParsedAfterAClosingAnswerWhileItIsStillWritten() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        rig.send("GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        // The first bytes of the 4 MiB answer are here: the rest waits for the client to read (socket
        // buffers hold far less), so the next request arrives while the answer is being written.
        let client = rig.client
        let first = await offPool {
            var first = [UInt8](repeating: 0, count: 1024)
            let count = recv(client, &first, first.count, 0)
            return Array(first.prefix(max(0, count)))
        }
        try #require(!first.isEmpty)
        rig.send("GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
        var exchange = await rig.readUntilClosed()
        exchange.bytes = first + exchange.bytes
        let closed = exchange.closed
        #expect(closed, "the connection stayed open after its connection: close answer")
        let statuses = try exchange.responses().map(\.status)
        #expect(statuses == [200])
        #expect(rig.handled() == ["/big"])
    }
}

/// One connection on its own event loop thread; `client` is the test's end of the socket pair (blocking,
/// reads time out after 10 s so a connection that wrongly stays open fails the test instead of hanging it).
private final class Rig: @unchecked Sendable {
    let loop: EventLoop
    let thread: LoopThread
    let client: Int32
    let owner: Owner
    let handler = RecordingHandler()

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw RigError.socketPair }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fds[1], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        client = fds[1]
        let loop = try EventLoop(index: 0)
        self.loop = loop
        owner = Owner(eventLoop: loop)
        thread = spawnThread(name: "http1-test-loop") { loop.run() }
        let serverFD = fds[0]
        let owner = self.owner
        let handler = self.handler
        let ready = DispatchSemaphore(value: 0)
        loop.execute {
            var limits = HTTP1Limits()
            limits.maxHeadBytes = 4096
            limits.maxBodyBytes = 1024
            let connection = HTTP1Connection(
                io: SocketStream(fd: serverFD), owner: owner, handler: handler, limits: limits)
            try? loop.watch(fd: serverFD, events: 0x001 | 0x2000, source: connection)  // EPOLLIN | EPOLLRDHUP
            owner.connection = connection
            ready.signal()
        }
        ready.wait()
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Reads until the server closes (or the read times out), on a thread of its own.
    func readUntilClosed() async -> Exchange {
        let client = client
        return await offPool { Self.readUntilClosed(client) }
    }

    private static func readUntilClosed(_ client: Int32) -> Exchange {
        var exchange = Exchange()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(client, &buffer, buffer.count, 0)
            if count > 0 {
                exchange.bytes += buffer.prefix(count)
            } else {
                exchange.closed = count == 0 || errno == ECONNRESET
                return exchange
            }
        }
    }

    func handled() -> [String] { handler.paths.withLock { $0 } }

    func stop() {
        close(client)
        loop.stop()
        thread.join()
    }

    enum RigError: Error { case socketPair }
}

/// What the client read, and whether the server closed.
private struct Exchange {
    struct Response {
        var status: Int
        var head: String
        var body: [UInt8]
    }

    var bytes: [UInt8] = []
    var closed = false

    struct Unframed: Error {}

    /// The responses in `bytes`, framed by their content-length (`Unframed` when they are not).
    func responses() throws -> [Response] {
        var rest = bytes[...]
        var found: [Response] = []
        while !rest.isEmpty {
            guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Unframed() }
            let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self)
            guard let status = Int(head.dropFirst("HTTP/1.1 ".count).prefix(3)),
                let length = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length: ") })
                    .flatMap({ Int($0.dropFirst("content-length: ".count)) }),
                rest.count - (end.upperBound - rest.startIndex) >= length
            else { throw Unframed() }
            found.append(Response(status: status, head: head, body: Array(rest[end.upperBound...].prefix(length))))
            rest = rest[(end.upperBound + length)...]
        }
        return found
    }
}

/// Answers with its path (and body, after a space); "/big" with 4 MiB. Records what it handled.
private final class RecordingHandler: HTTPRequestHandler {
    let paths = Lock<[String]>([])

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        paths.withLock { $0.append(request.path) }
        if request.path == "/big" { return HTTPResponse(status: 200, body: [UInt8](repeating: 97, count: 4 << 20)) }
        let text =
            request.body.isEmpty ? request.path : request.path + " " + String(decoding: request.body, as: UTF8.self)
        return HTTPResponse(status: 200, body: Array(text.utf8))
    }
}

private final class Owner: ConnectionOwner, @unchecked Sendable {
    let eventLoop: EventLoop
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    let receiveBudget = LoopReceiveBudget(SharedReceiveBudget(limit: 64 << 20))
    let internTable = InternTable(InternTable.commonHeaders)
    /// Kept here as a server's loop keeps its connections.
    var connection: HTTP1Connection?

    init(eventLoop: EventLoop) { self.eventLoop = eventLoop }
    deinit { readBuffer.deallocate() }
    func connectionClosed(_ connection: any LoopConnection) { self.connection = nil }
}
