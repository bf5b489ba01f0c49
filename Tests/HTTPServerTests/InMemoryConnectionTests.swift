import CNGHTTP2
import EventLoops
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// A `ServerConnection` driven over bytes in memory by a real nghttp2 client session: real frames, real
/// HPACK, real flow control, on a real event loop thread, with no socket and no sleep. What the client
/// session writes is handed to the connection as if read from a socket; what the connection writes (at the
/// end of the loop iteration, as in production) is handed back to the client session.
@Suite struct InMemoryConnectionTests {
    @Test func requestsAndTheirAnswersCrossAsRealFrames() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        let echo = rig.client.request(path: "/echo", body: Array("hello".utf8))
        let missing = rig.client.request(path: "/missing", body: [])
        await rig.exchange()
        let answer = try #require(rig.client.responses[echo])
        #expect(answer.headers.first { $0.0 == ":status" }?.1 == "200")
        #expect(answer.body == Array("hello".utf8))
        #expect(answer.trailers.contains { $0 == ("x-bytes", "5") })
        #expect(answer.ended)
        let notFound = try #require(rig.client.responses[missing])
        #expect(notFound.headers.first { $0.0 == ":status" }?.1 == "404")
        #expect(notFound.body.isEmpty && notFound.ended)
        #expect(await rig.onLoop { rig.owner.closed } == 0)
    }

    /// A connection hands the next request head the field array of the one before, emptied: each head
    /// carries exactly its own fields, however many the previous one had.
    @Test func eachRequestHeadCarriesOnlyItsOwnFields() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        let first = rig.client.request(path: "/fields", body: [], fields: [("x-a", "1"), ("x-b", "2"), ("x-c", "3")])
        await rig.exchange()
        let second = rig.client.request(path: "/fields", body: [], fields: [("x-d", "4")])
        let third = rig.client.request(path: "/fields", body: [], fields: [])
        await rig.exchange()
        func fields(_ id: Int32) throws -> String? {
            try #require(rig.client.responses[id]).headers.first { $0.0 == "x-fields" }?.1
        }
        #expect(try fields(first) == "x-a=1,x-b=2,x-c=3")
        #expect(try fields(second) == "x-d=4")
        #expect(try fields(third) == "")
    }

    /// Bodies large enough for NO_COPY frames (`ServerConnection.noCopyThreshold`) arrive whole and in order
    /// beside small ones, across the client's 64 KiB stream window (several round trips of WINDOW_UPDATE), and
    /// the trailers follow the last frame.
    @Test func largeAnswersCrossTheClientsWindowIntactBesideSmallOnes() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let sizes = [large.count, ServerConnection.noCopyThreshold, ServerConnection.noCopyThreshold - 1, 5]
        let ids = sizes.map { rig.client.request(path: "/echo", body: Array(large.prefix($0))) }
        for _ in 0..<64 where !ids.allSatisfy({ rig.client.responses[$0]?.ended == true }) {
            await rig.exchange()
        }
        for (id, size) in zip(ids, sizes) {
            let answer = try #require(rig.client.responses[id])
            #expect(answer.ended)
            #expect(answer.body == Array(large.prefix(size)))
            #expect(answer.trailers.contains { $0 == ("x-bytes", String(size)) })
        }
        #expect(await rig.onLoop { rig.owner.closed } == 0)
    }

    @Test func aFrameOnTheWrongStreamEndsTheConnectionWithGoaway() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        await rig.exchange()  // prefaces and SETTINGS
        // A DATA frame on stream 0 is a connection error of type PROTOCOL_ERROR (RFC 9113 §6.1).
        await rig.exchange(extra: [0, 0, 0, 0x0, 0x0, 0, 0, 0, 0])
        #expect(rig.client.goaways.last?.errorCode == NGHTTP2_PROTOCOL_ERROR.rawValue)
        #expect(await rig.onLoop { rig.owner.closed } == 1)
        // nghttp2 decided this GOAWAY; the owner still hears it, with nghttp2's reason.
        let heard = await rig.onLoop { rig.owner.goaways }
        #expect(heard.map(\.code) == [.protocolError])
        #expect(heard.first?.reason.isEmpty == false)
    }

    /// A gRPC client ends a server stream it has read enough of with RST_STREAM CANCEL, as often as it likes:
    /// 1,600 answered streams reset in a row leave the connection serving, without a GOAWAY. (nghttp2's own
    /// reset limit, 1,000 and then 33 a second, counted these and ended the connection with INTERNAL_ERROR.)
    @Test func resetsOfAnsweredStreamsNeverEndTheConnection() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        await rig.exchange()  // prefaces and SETTINGS: the client learns it may open 256 streams, not 100
        for _ in 0..<8 {
            let ids = (0..<200).map { _ in rig.client.request(path: "/open", body: []) }
            await rig.exchange()  // each is answered: its head and a first message
            #expect(ids.allSatisfy { rig.client.responses[$0]?.headers.isEmpty == false })
            for id in ids { rig.client.reset(id) }
            await rig.exchange()
        }
        let echo = rig.client.request(path: "/echo", body: [7])
        await rig.exchange()
        #expect(rig.client.responses[echo]?.body == [7])
        #expect(rig.client.goaways.isEmpty)
        #expect(await rig.onLoop { (rig.owner.closed, rig.owner.goaways.count) } == (0, 0))
    }

    /// Rapid reset (CVE-2023-44487): streams opened and cancelled before the server answered spend the
    /// connection's budget; past it the connection ends with ENHANCE_YOUR_CALM "too_many_resets".
    @Test func unansweredResetsPastTheBudgetEndTheConnection() async throws {
        var configuration = HTTP2Configuration()
        configuration.unansweredResetLimit = UnansweredResetLimit(burst: 10, perSecond: 0)
        let rig = try await Rig(configuration: configuration)
        defer { rig.stop() }
        // Each request goes out before its reset: a client session drops a request whose reset it has queued.
        let ids = (0..<10).map { _ in rig.client.request(path: "/echo", body: [1], endStream: false) }
        await rig.exchange()
        for id in ids { rig.client.reset(id) }
        await rig.exchange()
        #expect(rig.client.goaways.isEmpty)
        let last = rig.client.request(path: "/echo", body: [1], endStream: false)
        await rig.exchange()
        rig.client.reset(last)
        await rig.exchange()
        #expect(rig.client.goaways.map(\.errorCode) == [NGHTTP2_ENHANCE_YOUR_CALM.rawValue])
        let heard = await rig.onLoop { rig.owner.goaways }
        #expect(heard.map(\.code) == [.enhanceYourCalm] && heard.first?.reason == "too_many_resets")
        #expect(await rig.onLoop { rig.owner.closed } == 1)
    }

    /// RFC 9113 §6.8: a first GOAWAY with the largest stream id and a PING of the server's own; only when
    /// that PING comes back (here: the client session acknowledges it) does the final GOAWAY name the last
    /// stream really processed, and the connection closes once no stream is open.
    @Test func aGracefulCloseIsTwoGoawaysAroundThePingRoundTrip() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        let first = rig.client.request(path: "/echo", body: [1])
        await rig.exchange()
        #expect(rig.client.responses[first]?.ended == true)
        await rig.onLoop { rig.connection.beginGracefulClose() }
        await rig.exchange()  // the first GOAWAY and the PING reach the client, its ACK goes back
        await rig.exchange()  // the final GOAWAY
        #expect(rig.client.goaways.count == 2)
        #expect(rig.client.goaways.first?.lastStreamID == Int32.max)
        #expect(rig.client.goaways.last?.lastStreamID == first)
        #expect(rig.client.goaways.allSatisfy { $0.errorCode == NGHTTP2_NO_ERROR.rawValue })
        #expect(await rig.onLoop { rig.owner.closed } == 1)
        #expect(await rig.onLoop { rig.owner.goaways.map(\.code) } == [.noError, .noError])
    }
}

/// An event loop on its own thread, one connection on it over a `MemoryStream`, and the client session.
private final class Rig: @unchecked Sendable {
    let loop: EventLoop
    let thread: LoopThread
    let stream: MemoryStream
    let owner: MemoryOwner
    let client = Client()
    let connection: ServerConnection

    init(configuration: HTTP2Configuration = HTTP2Configuration()) async throws {
        let loop = try EventLoop(index: 0)
        let stream = MemoryStream()
        let owner = MemoryOwner(eventLoop: loop)
        thread = spawnThread(name: "memory-loop") { loop.run() }
        let made = await Self.run(on: loop) {
            try? ServerConnection(io: stream, owner: owner, responder: EchoResponder(), configuration: configuration)
        }
        self.loop = loop
        self.stream = stream
        self.owner = owner
        connection = try #require(made)
    }

    /// Runs `body` on the loop and waits for it (the loop flushes what it queued before the next task).
    @discardableResult
    func onLoop<T>(_ body: @escaping () -> T) async -> T {
        await Self.run(on: loop, body)
    }

    private static func run<T>(on loop: EventLoop, _ body: @escaping () -> T) async -> T {
        nonisolated(unsafe) let body = body
        return await withCheckedContinuation { (continuation: CheckedContinuation<UncheckedBox<T>, Never>) in
            loop.execute { continuation.resume(returning: UncheckedBox(body())) }
        }.value
    }

    /// Client bytes (and `extra` raw bytes) to the connection, then the connection's answer to the client.
    func exchange(extra: [UInt8] = []) async {
        let bytes = client.output() + extra
        await onLoop {
            self.stream.inbound += bytes
            self.connection.handle(events: 0x001)  // EPOLLIN
        }
        let answer = await onLoop { self.stream.takeOutbound() }
        client.input(answer)
    }

    /// Closes the connection (its streams and nghttp2 session go with it), then stops the loop and its thread.
    func stop() {
        loop.execute { self.connection.closeNow() }
        loop.stop()
        thread.join()
    }
}

private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Bytes in memory instead of a socket: what the test puts in is read, what the connection writes is kept.
private final class MemoryStream: ByteStream {
    let fd: Int32 = -1
    var inbound: [UInt8] = []
    private var outbound: [UInt8] = []
    private var closed = false

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        if closed { return .failed }
        guard !inbound.isEmpty else { return .wouldBlock(wantsWrite: false) }
        let count = min(buffer.count, inbound.count)
        inbound.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        inbound.removeFirst(count)
        return .bytes(count)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        if closed { return .failed }
        outbound.append(contentsOf: bytes)
        return .bytes(bytes.count)
    }

    func takeOutbound() -> [UInt8] {
        defer { outbound.removeAll() }
        return outbound
    }

    var hasBufferedInput: Bool { false }
    func close(abort: Bool) { closed = true }
}

private final class MemoryOwner: ConnectionOwner {
    let eventLoop: EventLoop
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    let receiveBudget = LoopReceiveBudget(SharedReceiveBudget(limit: 64 << 20))
    let internTable = InternTable(InternTable.commonHeaders)
    var closed = 0
    var goaways: [SentGoaway] = []

    init(eventLoop: EventLoop) { self.eventLoop = eventLoop }
    deinit { readBuffer.deallocate() }
    func connectionClosed(_ connection: any LoopConnection) { closed += 1 }
    func goawaySent(_ goaway: SentGoaway) { goaways.append(goaway) }
}

/// Answers /echo with the request body and an `x-bytes` trailer, /fields with the request's regular fields in
/// an `x-fields` header, /open with a head and a first message and never more (a server stream in progress);
/// anything else is nobody's (404).
private struct EchoResponder: HTTP2Responder {
    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? {
        if head.path == "/open" {
            stream.respond(status: 200, fields: [], endStream: false)
            stream.write([1, 2, 3])
            return Held()
        }
        if head.path == "/fields" {
            let listed = head.fields.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
            stream.respond(status: 200, fields: [("x-fields", listed)], endStream: true)
            return nil
        }
        return head.path == "/echo" && head.method == "POST" ? Echo() : nil
    }

    /// A stream left open: its request is read and dropped, nothing more is sent.
    final class Held: HTTP2StreamDelegate {
        func stream(_ stream: any HTTPServerStream, received data: UnsafeRawBufferPointer) {
            stream.releaseReceived(data.count)
        }
        func streamRequestEnded(_ stream: any HTTPServerStream) {}
        func streamWritable(_ stream: any HTTPServerStream) {}
        func streamClosed(_ stream: any HTTPServerStream, errorCode: HTTP2ErrorCode) {}
    }

    final class Echo: HTTP2StreamDelegate {
        var body: [UInt8] = []
        func stream(_ stream: any HTTPServerStream, received data: UnsafeRawBufferPointer) {
            body += data
            stream.releaseReceived(data.count)
        }
        func streamRequestEnded(_ stream: any HTTPServerStream) {
            stream.respond(status: 200, fields: [("content-type", "application/octet-stream")], endStream: false)
            stream.write(body)
            stream.finish(trailers: [("x-bytes", String(body.count))])
        }
        func streamWritable(_ stream: any HTTPServerStream) {}
        func streamClosed(_ stream: any HTTPServerStream, errorCode: HTTP2ErrorCode) {}
    }
}

/// A real nghttp2 client session in memory.
private final class Client: @unchecked Sendable {
    struct Response {
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        var trailers: [(String, String)] = []
        var ended = false
    }

    private var session: OpaquePointer?
    private var bodies: [Int32: [UInt8]] = [:]
    /// Streams whose request stays open once their body is sent.
    private var open: Set<Int32> = []
    private(set) var responses: [Int32: Response] = [:]
    private(set) var goaways: [(lastStreamID: Int32, errorCode: UInt32)] = []

    init() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, user in
            let client = Unmanaged<Client>.fromOpaque(user!).takeUnretainedValue()
            let field = (
                String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            )
            let id = frame!.pointee.hd.stream_id
            if frame!.pointee.headers.cat == NGHTTP2_HCAT_RESPONSE {
                client.responses[id, default: Response()].headers.append(field)
            } else {
                client.responses[id, default: Response()].trailers.append(field)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, length, user in
            let client = Unmanaged<Client>.fromOpaque(user!).takeUnretainedValue()
            client.responses[id, default: Response()].body += UnsafeBufferPointer(start: data, count: length)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            let client = Unmanaged<Client>.fromOpaque(user!).takeUnretainedValue()
            let header = frame!.pointee.hd
            if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 && header.stream_id != 0 {
                client.responses[header.stream_id, default: Response()].ended = true
            }
            return 0
        }
        nghttp2_session_client_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        nghttp2_session_callbacks_del(callbacks)
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil, 0)
    }

    deinit { nghttp2_session_del(session) }

    /// Queues a POST of `body` to `path`, ended unless `endStream` is false; returns its stream id.
    func request(path: String, body: [UInt8], fields extra: [(String, String)] = [], endStream: Bool = true) -> Int32 {
        let fields = [(":method", "POST"), (":scheme", "http"), (":authority", "memory"), (":path", path)] + extra
        var bytes: [UInt8] = []
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        for (name, value) in fields {
            let nameStart = bytes.count
            bytes += name.utf8
            let valueStart = bytes.count
            bytes += value.utf8
            spans.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        var provider = nghttp2_data_provider()
        provider.read_callback = { _, id, buffer, length, flags, _, user in
            let client = Unmanaged<Client>.fromOpaque(user!).takeUnretainedValue()
            let pending = client.bodies[id] ?? []
            let count = min(length, pending.count)
            pending.withUnsafeBufferPointer { if count > 0 { buffer!.update(from: $0.baseAddress!, count: count) } }
            client.bodies[id] = Array(pending.dropFirst(count))
            if count == pending.count {
                if client.open.contains(id) { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
                flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            }
            return count
        }
        // nghttp2 copies the fields before `submit_request` returns.
        let id = bytes.withUnsafeMutableBufferPointer { base in
            var pairs = spans.map { span in
                nghttp2_nv(
                    name: base.baseAddress! + span.name.lowerBound, value: base.baseAddress! + span.value.lowerBound,
                    namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nghttp2_submit_request(session, nil, &pairs, pairs.count, &provider, nil)
        }
        bodies[id] = body
        if !endStream { open.insert(id) }
        return id
    }

    /// Cancels a stream (RST_STREAM CANCEL), as a gRPC client does.
    func reset(_ id: Int32) {
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
    }

    /// Everything the session has to send.
    func output() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            guard length > 0, let data else { return bytes }
            bytes += UnsafeBufferPointer(start: data, count: length)
        }
    }

    /// Bytes from the server.
    func input(_ bytes: [UInt8]) {
        // GOAWAY frames are read off the raw bytes: once a GOAWAY arrived and no stream is open, the client
        // session no longer reports frames, and the test is about every GOAWAY the server sends.
        var offset = 0
        while offset + 9 <= bytes.count {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            if bytes[offset + 3] == UInt8(NGHTTP2_GOAWAY.rawValue), offset + 9 + 8 <= bytes.count {
                func word(_ at: Int) -> UInt32 {
                    bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                }
                goaways.append((Int32(bitPattern: word(offset + 9) & 0x7fff_ffff), word(offset + 13)))
            }
            offset += 9 + length
        }
        _ = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
    }
}
