internal import CLinux
internal import CNGHTTP2
import EventLoops
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// One accepted HTTP/2 connection: the socket, its nghttp2 server session and its streams.
///
/// Owned by the `ServerLoop` of its event loop (which keeps it in a table by file descriptor); every call
/// happens on that loop. nghttp2 calls back into it through `Unmanaged` user data (see NGHTTP2Callbacks).
final class ServerConnection: LoopConnection, IterationEndTarget {
    var iterationEndQueued = false
    let io: any ByteStream
    var fd: Int32 { io.fd }
    let eventLoop: EventLoop
    let configuration: HTTP2Configuration
    let responder: any HTTP2Responder
    /// The responder's repeated strings (paths, common header names and values), looked up by bytes.
    private let interned: InternTable
    /// Header strings this connection's last requests carried that the table does not hold (a client's
    /// user-agent, its bearer token): a client repeats them on every request, so they are made once.
    private var recentStrings = RecentStrings()
    /// The field array of the last request head, emptied with its capacity kept: the next head fills it
    /// instead of allocating its own.
    private var spareFields: [(name: String, value: String)] = []
    private unowned let owner: any ConnectionOwner
    private var session: OpaquePointer?
    /// The open streams, owned here (no hashing to add or remove one); nghttp2 keeps a pointer to each as its
    /// stream user data, which is how callbacks find them (no lookup by id).
    private var streams = SlotArray<HTTP2Stream>()
    /// The verified client certificate's names, set once after the TLS handshake (nil for h2c).
    var peerCertificate: PeerCertificateIdentity?

    private var outbound = ByteQueue(keptCapacity: 256 * 1024)
    private var wantsWritable = false
    /// Serving, inside `nghttp2_session_mem_recv` (where a close must wait), or closed.
    private var phase = ServerConnectionPhase.serving
    private var closed: Bool { phase.isClosed }
    /// Idle, keepalive, max age, PING strikes and the graceful close: decided there, performed here.
    private var management: ConnectionManagement
    /// When the socket was last read: the `receivedAt` of the requests those bytes opened.
    private var readAt: MonotonicInstant?
    /// Resets of streams not answered yet that the client may still send (nil: no limit).
    private var unansweredResets: ResetBudget?
    /// The stream the last callback was about: nghttp2 calls back several times in a row for one stream (each
    /// header field, then the frame), and this spares the lookup of its user data each time. Unretained, like
    /// nghttp2's user data: `streams` owns the stream, and `streamClosed`/`close()` forget it before letting go.
    private var lastStream: (id: Int32, stream: Unmanaged<HTTP2Stream>)?
    /// The client's preface and first SETTINGS arrived (RFC 9113 §3.4): the owner has been told.
    private var established = false
    /// The stream whose request header block is being received (HEADERS without its END_HEADERS yet, or a
    /// frame of it not yet whole); nil between blocks.
    private var headerBlockStream: Int32?
    private var housekeepingTimer: IOLoopTimer?
    private var housekeepingAt: MonotonicInstant?
    /// Request bytes held by this connection's streams and the window owed to the peer.
    private var ledger: ReceiveLedger
    private let budget: LoopReceiveBudget
    private var grantRetryTimer: IOLoopTimer?

    /// Takes over `io`, already registered with the loop under its fd (re-pointed here to this connection).
    init(
        io: any ByteStream, owner: any ConnectionOwner, responder: any HTTP2Responder, configuration: HTTP2Configuration
    )
        throws
    {
        self.io = io
        self.owner = owner
        self.eventLoop = owner.eventLoop
        self.responder = responder
        self.interned = owner.internTable
        self.configuration = configuration
        self.ledger = ReceiveLedger(limit: configuration.maxBufferedBytesPerConnection)
        self.budget = owner.receiveBudget
        self.management = ConnectionManagement(
            policy: .init(configuration, ageJitter: Double.random(in: 0.9...1.1)), now: .now())
        self.unansweredResets = configuration.unansweredResetLimit.map { ResetBudget($0, now: .now()) }
        var session: OpaquePointer?
        let rc = nghttp2_session_server_new2(
            &session, NGHTTP2Callbacks.shared.pointer, Unmanaged.passUnretained(self).toOpaque(),
            NGHTTP2Callbacks.shared.options)
        guard rc == 0, let session else { throw SystemError(call: "nghttp2_session_server_new2", errno: ENOMEM) }
        self.session = session
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: configuration.maxConcurrentStreams),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: configuration.initialWindowSize),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: configuration.maxHeaderListSize),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        // The connection window starts at 65,535 whatever SETTINGS say; open it to match the stream window.
        if configuration.initialWindowSize > 65_535 {
            _ = nghttp2_session_set_local_window_size(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(clamping: configuration.initialWindowSize))
        }
        eventLoop.replaceSource(fd: io.fd, with: self)
        eventLoop.rewatch(fd: io.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
        // The server's preface (its SETTINGS, queued above) goes out with the answer to the client's own, once
        // that arrived (RFC 9113 §3.4 lets either side speak first): a socket that stays silent is never written
        // to, and a client that sees the server's SETTINGS knows its connection is established, counted against
        // `maxConnections`, so a connection cap holds exactly for callers that wait for them.
        scheduleHousekeeping()
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var openStreamCount: Int { streams.count }

    /// Whether a graceful close has begun.
    var draining: Bool { management.draining }

    // MARK: Events

    func handle(events: UInt32) {
        eventLoop.assertInLoop("an HTTP/2 connection")
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0 {
            readAvailable()
        }
        if !closed && events & EPOLLOUT.rawValue != 0 {
            flush()
        }
    }

    private func readAvailable() {
        guard session != nil else { return }
        let buffer = owner.readBuffer
        // Level-triggered: read a bounded amount per event so one busy peer cannot starve the others
        // (TLS may hold decrypted bytes the socket no longer signals, so those are always drained).
        var rounds = 0
        reading: while true {
            switch io.read(into: buffer) {
            case .bytes(let count):
                let now = MonotonicInstant.now()
                readAt = now
                management.bytesRead(now: now)
                if !receive(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { return }
                rounds += 1
                if (count < buffer.count || rounds >= 4) && !io.hasBufferedInput { break reading }
            case .wouldBlock:
                break reading
            case .closed, .failed:
                close()
                return
            }
        }
        needsFlush()
    }

    /// Feeds bytes to nghttp2; false when the connection had to close.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let session, bytes.count > 0 else { return session != nil }
        phase.beginReceiving()
        let consumed = nghttp2_session_mem_recv(
            session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        let closeRequested = phase.endReceiving()
        if consumed < 0 || closeRequested {
            // A protocol error (nghttp2 queued a GOAWAY when it could) or a close decided in a callback.
            flush()
            close()
            return false
        }
        // A header block arrives whole with its first read, but for a peer that splits or stalls it: only then
        // is its deadline armed (a timer per call would cost every call).
        if headerBlockStream != nil { housekeepingDue(by: management.nextDeadline) }
        return true
    }

    /// Performs what `ConnectionManagement` decided.
    private func perform(_ actions: [ConnectionManagement.Action]) {
        guard let session, !closed else { return }
        for action in actions {
            switch action {
            case .sendPing(let payload):
                var bytes = payload.bigEndian
                withUnsafeBytes(of: &bytes) {
                    _ = nghttp2_submit_ping(
                        session, UInt8(NGHTTP2_FLAG_NONE.rawValue), $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            case .sendShutdownNotice:
                _ = nghttp2_submit_shutdown_notice(session)
            case .sendGoaway(let code, let debug):
                let last = nghttp2_session_get_last_proc_stream_id(session)
                var debugBytes = Array(debug.utf8)
                _ = debugBytes.withUnsafeMutableBufferPointer {
                    nghttp2_submit_goaway(
                        session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code.rawValue, $0.baseAddress, $0.count)
                }
            case .close:
                switch phase.requestClose() {
                case .closeNow:
                    flush()
                    close()
                    return
                case .afterReceiving, .ignored:
                    break
                }
            }
        }
        needsFlush()
        housekeepingDue(by: management.nextDeadline)
    }

    func needsFlush() {
        if !closed { eventLoop.atIterationEnd(self) }
    }

    func iterationEnded() { flush() }

    /// Serialises what nghttp2 has to send and writes it to the socket.
    func flush() {
        guard !closed, let session else { return }
        while true {
            if outbound.count < configuration.connectionWriteBufferLimit {
                collectFrames(session)
                if closed { return }
            }
            if outbound.isEmpty { break }
            switch outbound.withBytes({ io.write($0) }) {
            case .bytes(let written):
                outbound.consume(written)
                if outbound.isEmpty { continue }
                setWantsWritable(true)
                return
            case .wouldBlock:
                setWantsWritable(true)
                return
            case .closed, .failed:
                close()
                return
            }
        }
        setWantsWritable(false)
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            close()
        }
    }

    private func collectFrames(_ session: OpaquePointer) {
        while outbound.count < configuration.connectionWriteBufferLimit {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 {
                close()
                return
            }
            guard length > 0, let data else { return }
            outbound.append(UnsafeRawBufferPointer(start: data, count: length))
        }
    }

    private func setWantsWritable(_ wants: Bool) {
        guard wants != wantsWritable, !closed else { return }
        wantsWritable = wants
        let base = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        if !eventLoop.rewatch(fd: fd, events: wants ? base | EPOLLOUT.rawValue : base) { close() }
    }

    /// Closes the socket at once; open streams see `streamClosed` with CANCEL.
    func close() {
        guard phase.close() else { return }
        if let housekeepingTimer { eventLoop.cancelTimer(housekeepingTimer) }
        if let grantRetryTimer { eventLoop.cancelTimer(grantRetryTimer) }
        budget.subtract(ledger.held)
        ledger = ReceiveLedger(limit: configuration.maxBufferedBytesPerConnection)
        eventLoop.unwatch(fd: fd)
        io.close(abort: false)
        let open = streams.removeAll()
        lastStream = nil
        for stream in open {
            guard stream.state.close() == nil else { continue }
            stream.delegate?.streamClosed(stream, errorCode: .cancel)
            stream.delegate = nil
        }
        owner.connectionClosed(self)
    }

    // MARK: Responses (called by HTTP2Stream)

    /// Submits the response head `head`, plus one per-response field when given (e.g. `x-request-id`):
    /// the prepared pairs are used as they are (their bytes uncopied, the stream keeps the block) and the
    /// extra one points at the caller's bytes for the call's duration (nghttp2 copies that value), so nothing
    /// is encoded here.
    func submitResponse(
        _ stream: HTTP2Stream, head: HeaderBlock, extra: (name: StaticString, value: UnsafeBufferPointer<UInt8>)? = nil,
        endStream: Bool
    ) {
        guard let session else { return }
        stream.submittedHead = head  // nghttp2 reads its bytes when it packs the frame (HeaderBlock)
        management.responseFrameSent()  // sending headers resets the client's ping budget
        var provider = nghttp2_data_provider()
        provider.read_callback = NGHTTP2Callbacks.readData
        func submit(_ pairs: UnsafePointer<nghttp2_nv>?, _ count: Int) -> Int32 {
            endStream
                ? nghttp2_submit_response(session, stream.id, pairs, count, nil)
                : nghttp2_submit_response(session, stream.id, pairs, count, &provider)
        }
        var rc: Int32
        if let extra {
            rc = withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: head.count + 1) { pairs in
                for index in 0..<head.count { pairs[index] = head.pairs[index] }
                pairs[head.count] = nghttp2_nv(
                    name: UnsafeMutablePointer(mutating: extra.name.utf8Start),
                    value: UnsafeMutablePointer(mutating: extra.value.baseAddress ?? extra.name.utf8Start),
                    namelen: extra.name.utf8CodeUnitCount, valuelen: extra.value.count,
                    // A value of this response only (a request id): kept out of the HPACK table, where it
                    // would only push out the fields that do repeat.
                    flags: UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue | NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue))
                return submit(pairs.baseAddress, head.count + 1)
            }
        } else {
            rc = submit(head.pairs.baseAddress, head.count)
        }
        if rc != 0 { resetStream(stream, errorCode: .internalError) }
        needsFlush()
    }

    func resumeData(_ stream: HTTP2Stream) {
        guard let session else { return }
        _ = nghttp2_session_resume_data(session, stream.id)
    }

    func resetStream(_ stream: HTTP2Stream, errorCode: HTTP2ErrorCode) {
        guard let session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, errorCode.rawValue)
        needsFlush()
    }

    /// Frames carrying at least this many body bytes are sent NO_COPY (`sendData`): their bytes go from the
    /// stream's queue to the outbound bytes in one copy instead of two (through nghttp2's frame buffer). Below
    /// it the copy costs less than the extra callback.
    static let noCopyThreshold = 2048

    /// nghttp2's data source: body bytes, then EOF with trailers (NO_END_STREAM) or END_STREAM. A frame of
    /// `noCopyThreshold` bytes or more is only sized here; `sendData` moves its bytes when nghttp2 sends it.
    func readData(
        streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int,
        flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let stream = stream(streamID), let session else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        switch stream.state.nextFrame(capacity: capacity, noCopyThreshold: Self.noCopyThreshold, into: buffer) {
        case .data(let count, let noCopy, let before):
            // Sending DATA resets the client's ping budget, as sending headers does (grpc chttp2 resets strikes
            // on every data or header frame it writes): grpcio's BDP probes ping on each DATA frame it reads, so
            // a long server stream would otherwise end in GOAWAY "too_many_pings".
            management.responseFrameSent()
            if noCopy {
                flags.pointee |= NGHTTP2_DATA_FLAG_NO_COPY.rawValue
            } else {
                notifyIfDrained(stream, before: before)
            }
            return count
        case .last(let count, let noCopy, let trailers):
            if count > 0 { management.responseFrameSent() }
            if noCopy { flags.pointee |= NGHTTP2_DATA_FLAG_NO_COPY.rawValue }
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if let trailers {
                flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                stream.submittedTrailers = trailers  // read when packed, as the head (HeaderBlock)
                let rc = nghttp2_submit_trailer(session, streamID, trailers.pairs.baseAddress, trailers.count)
                if rc != 0 { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
            }
            return count
        case .deferred:
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        case .refused:
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
    }

    /// A NO_COPY DATA frame of `length` body bytes is being sent: its 9-byte header (and padding, which this
    /// server never asks for, but nghttp2 defines) and the bytes from the front of the stream's queue, appended
    /// to the outbound bytes. nghttp2 calls this right after `readData` sized the frame, in the same
    /// `mem_send`, so the queue still holds them.
    func sendData(streamID: Int32, frameHeader: UnsafePointer<UInt8>, length: Int, padding: Int) -> Int32 {
        // A Pad Length is one byte: more than 256 padding bytes (the length byte included) cannot be framed.
        guard let stream = stream(streamID), stream.bufferedBytes >= length, (0...256).contains(padding) else {
            return Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let before = stream.bufferedBytes
        outbound.append(UnsafeRawBufferPointer(start: frameHeader, count: 9))
        // With padding, a Pad Length byte leads the body and that many zero bytes end it (RFC 9113 §6.1);
        // `padding` counts the length byte too.
        if padding > 0 { outbound.append([UInt8(padding - 1)]) }
        _ = stream.state.moveBody(length, to: &outbound)
        if padding > 1 { outbound.append([UInt8](repeating: 0, count: padding - 1)) }
        notifyIfDrained(stream, before: before)
        return 0
    }

    /// Tells the stream's producer it may write again once its queue fell to the low-water mark.
    private func notifyIfDrained(_ stream: HTTP2Stream, before: Int) {
        let lowWater = configuration.streamWriteHighWatermark / 2
        if before > lowWater && stream.bufferedBytes <= lowWater {
            stream.delegate?.streamWritable(stream)
        }
    }

    // MARK: Callbacks from nghttp2 (see NGHTTP2Callbacks)

    /// The stream with this id, from nghttp2's stream user data (set while `streams` owns the stream).
    private func stream(_ id: Int32) -> HTTP2Stream? {
        streamReference(id)?.takeUnretainedValue()
    }

    /// The stream with this id, unretained: for a callback that cannot let go of it (nothing it calls reaches
    /// `streamClosed` or `close()`), which then uses it without a retain and release of its own.
    @inline(__always)
    private func streamReference(_ id: Int32) -> Unmanaged<HTTP2Stream>? {
        // After close() (even one reached from inside a callback, while nghttp2 still walks the buffer) the
        // streams are released: their user data must never be read again.
        guard !closed, let session else { return nil }
        if let lastStream, lastStream.id == id { return lastStream.stream }
        guard let pointer = nghttp2_session_get_stream_user_data(session, id) else { return nil }
        let stream = Unmanaged<HTTP2Stream>.fromOpaque(pointer)
        lastStream = (id, stream)
        return stream
    }

    func beginHeaders(streamID: Int32) {
        let stream = HTTP2Stream(id: streamID, connection: self, eventLoop: eventLoop)
        stream.head.receivedAt = readAt
        streams.add(stream)
        if let session {
            _ = nghttp2_session_set_stream_user_data(session, streamID, Unmanaged.passUnretained(stream).toOpaque())
        }
        management.streamOpened()
        headerBlockStream = streamID
        management.headerBlockStarted(now: readAt ?? .now())
    }

    /// A block of request trailers began: it has the header-block deadline a request's head has.
    func beginTrailers(streamID: Int32) {
        headerBlockStream = streamID
        management.headerBlockStarted(now: readAt ?? .now())
    }

    /// A block of request trailers was received whole.
    func trailersComplete(streamID: Int32) {
        if headerBlockStream == streamID { endHeaderBlock() }
    }

    /// Collects one request header field; a list over the size limit is remembered and answered with 431.
    /// The value's String is made only for fields that are kept.
    func header(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        // Called for every field of every request: the stream is borrowed, not retained (nothing here lets go
        // of it).
        streamReference(streamID)?._withUnsafeGuaranteedRef { header($0, name: name, value: value) }
    }

    private func header(_ stream: HTTP2Stream, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard stream.delegate == nil, !stream.hasResponded else { return }
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > Int(configuration.maxHeaderListSize) {
            stream.headerListTooLarge = true
            return
        }
        if stream.headerListTooLarge { return }
        if name.first == UInt8(ascii: ":") {
            if Self.equal(name, ":path") {
                if let known = interned.lookup(value) {
                    (stream.head.path, stream.head.pathIndex) = known
                } else {
                    stream.head.path = String(decoding: value, as: UTF8.self)
                }
            } else if Self.equal(name, ":method") {
                stream.head.method = string(value)
            } else if Self.equal(name, ":scheme") {
                stream.head.scheme = string(value)
            } else if Self.equal(name, ":authority") {
                stream.head.authority = string(value)
            }
        } else if !Self.isHopHeader(name) {
            if stream.head.fields.capacity == 0 {
                swap(&stream.head.fields, &spareFields)
                if stream.head.fields.capacity == 0 { stream.head.fields.reserveCapacity(8) }
            }
            stream.head.fields.append((string(name), string(value)))
        }
    }

    /// The String of a header name or value: from the intern table, from this connection's recent ones, or new.
    private func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if let known = interned.lookup(bytes) { return known.string }
        return recentStrings.string(bytes)
    }

    /// Whether `bytes` spell `literal` (compared as bytes; no String is made).
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }

    /// Request fields no responder reads: `te` (always "trailers" for gRPC) and `content-length`.
    private static func isHopHeader(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        equal(name, "te") || equal(name, "content-length")
    }

    func headersComplete(streamID: Int32, endStream: Bool) {
        if headerBlockStream == streamID { endHeaderBlock() }
        guard let stream = stream(streamID) else { return }
        if stream.delegate == nil && !stream.hasResponded {
            if stream.headerListTooLarge {
                stream.respond(status: 431, fields: [], endStream: true)
            } else if management.refusesNewStreams {
                stream.reset(errorCode: .refusedStream)
            } else {
                // The head moves out of the stream (nothing reads it there after this): handed over without
                // a copy of its strings and fields.
                var head = HTTP2RequestHead()
                swap(&head, &stream.head)
                stream.delegate = responder.streamStarted(stream, head: head)
                // Its fields array serves the next head (a responder that kept the array keeps its own copy); an
                // array grown past 64 fields is let go, so a connection keeps no more than that between heads.
                if spareFields.capacity == 0 && head.fields.capacity <= 64 {
                    // Emptied one by one: `removeAll(keepingCapacity:)` destroys the (name, value) tuples through
                    // the runtime's generic tuple witnesses, several times the cost of releasing their strings.
                    while head.fields.popLast() != nil {}
                    swap(&spareFields, &head.fields)
                }
                if stream.delegate == nil && !stream.hasResponded {
                    stream.respond(status: 404, fields: [], endStream: true)
                }
            }
        }
        if endStream { requestEnded(stream) }
    }

    func dataChunk(streamID: Int32, _ data: UnsafeRawBufferPointer) {
        guard let stream = stream(streamID), let delegate = stream.delegate else {
            // Nobody keeps these bytes: their window goes back at once.
            grant(ReceiveLedger.Grants(ReceiveLedger.Grant(stream: streamID, count: data.count)))
            return
        }
        budget.add(data.count)
        grant(
            ledger.received(data.count, stream: streamID, streamHeld: &stream.heldBytes, processHasRoom: budget.hasRoom)
        )
        delegate.stream(stream, received: data)
    }

    // MARK: Flow control (the window is granted by hand, see ReceiveLedger)

    /// The stream's consumer let go of `count` request bytes (or all it holds, when nil); the stream checked
    /// that it is still open.
    func release(_ stream: HTTP2Stream, count: Int?) {
        guard !closed else { return }
        let (released, grants) = ledger.release(
            count ?? stream.heldBytes, stream: stream.id, streamHeld: &stream.heldBytes, processHasRoom: budget.hasRoom)
        budget.subtract(released)
        grant(grants)
    }

    private func grant(_ grants: ReceiveLedger.Grants) {
        guard let session, !closed else { return }
        if !grants.isEmpty {
            grants.forEachGrant { grant in
                if grant.count > 0 { _ = nghttp2_session_consume(session, grant.stream, grant.count) }
            }
            needsFlush()
        }
        // Held back only by the process-wide cap: look again soon, since other connections release bytes
        // without telling this one. (Over its own budget, only its own streams' releases can help.)
        if grantRetryTimer == nil && ledger.owesWindow && ledger.held <= ledger.limit {
            grantRetryTimer = eventLoop.scheduleTimer(after: .milliseconds(50)) { [self] in
                self.grantRetryTimer = nil  // held until it fires or close() cancels it
                guard !self.closed else { return }
                self.grant(self.ledger.grantsIfRoom(processHasRoom: self.budget.hasRoom))
            }
        }
    }

    func dataEnded(streamID: Int32) {
        guard let stream = stream(streamID) else { return }
        requestEnded(stream)
    }

    /// The client ended the stream's request: its delegate hears it once.
    private func requestEnded(_ stream: HTTP2Stream) {
        guard stream.state.requestEnded() == nil, let delegate = stream.delegate else { return }
        delegate.streamRequestEnded(stream)
    }

    func streamClosed(streamID: Int32, errorCode: HTTP2ErrorCode) {
        if headerBlockStream == streamID { endHeaderBlock() }
        let stream = stream(streamID)
        let (released, grants) = ledger.streamClosed(
            streamID, streamHeld: stream?.heldBytes ?? 0, processHasRoom: budget.hasRoom)
        budget.subtract(released)
        grant(grants)
        guard let stream else { return }
        stream.heldBytes = 0
        if lastStream?.id == streamID { lastStream = nil }
        streams.remove(stream)
        // nghttp2 destroys the stream, user data and all, as this callback returns: the session is made with
        // `no_closed_streams` (NGHTTP2Callbacks), so no closed stream is kept that could hand out the pointer.
        if stream.state.close() == nil {
            stream.delegate?.streamClosed(stream, errorCode: errorCode)
            stream.delegate = nil
        }
        if streams.isEmpty {
            management.allStreamsClosed(now: .now())
            housekeepingDue(by: management.nextDeadline)
            if draining { needsFlush() }
        }
    }

    /// The client reset a stream (RST_STREAM; nghttp2 closes it next). Cancelling a stream the server has not
    /// answered spends the connection's budget (`ResetBudget`); past it the connection ends with GOAWAY
    /// ENHANCE_YOUR_CALM "too_many_resets". A stream already answered, or already gone, costs nothing.
    func resetReceived(streamID: Int32) {
        guard let stream = stream(streamID), !stream.hasResponded, !management.refusesNewStreams else { return }
        if unansweredResets?.unansweredReset(now: readAt ?? .now()) == false {
            perform(management.closeNow(.enhanceYourCalm, debug: "too_many_resets"))
        }
    }

    /// nghttp2 sent a GOAWAY on this connection: the owner counts it and reports why.
    func goawaySent(_ goaway: SentGoaway) {
        owner.goawaySent(goaway)
    }

    /// A SETTINGS frame from the client. The first one completes the client's connection preface (nghttp2
    /// refuses anything else first), which ends the connection's handshake deadline.
    func settingsReceived() {
        guard !established else { return }
        established = true
        management.prefaceReceived(now: readAt ?? .now())
        housekeepingDue(by: management.nextDeadline)
        owner.connectionEstablished(self)
    }

    /// The request header block being received ended (complete, or its stream closed).
    private func endHeaderBlock() {
        headerBlockStream = nil
        management.headerBlockEnded()
    }

    /// A call of this connection was admitted by the server's guard (`HTTPServerStream.admitConnection`).
    func callAdmitted() {
        if !management.admitted { management.callAdmitted() }
    }

    /// A PING from the client (nghttp2 answers it); too many end the connection (`ConnectionManagement`).
    func clientPinged() {
        perform(management.clientPinged(now: .now(), openStreams: streams.count))
    }

    /// The peer acknowledged one of our PINGs (`payload` as sent).
    func pingAcknowledged(payload: UInt64) {
        perform(management.pingAcknowledged(payload: payload))
    }

    // MARK: Connection management

    func closeNow() {
        eventLoop.assertInLoop("an HTTP/2 connection")
        flush()
        close()
    }

    /// Starts a graceful close (RFC 9113 §6.8): GOAWAY with the maximum stream id and a PING of its own,
    /// then, once that PING returns (or after a timeout), GOAWAY with the last stream id really processed.
    /// Streams in flight finish; the connection closes when none is left.
    func beginGracefulClose() {
        eventLoop.assertInLoop("an HTTP/2 connection")
        perform(management.beginGracefulClose(now: .now()))
    }

    /// Arms the connection's one timer for its next real deadline (idle, keepalive, PING answer, max age,
    /// end of the max-age grace), not a fixed tick: 10,000 idle connections must not mean 10,000 wake-ups a
    /// second. State changes that bring a deadline closer call `housekeepingDue(by:)`.
    private func scheduleHousekeeping() {
        guard !closed, let next = management.nextDeadline else { return }
        armHousekeeping(at: max(next, .now() + .milliseconds(10)))
    }

    private func armHousekeeping(at deadline: MonotonicInstant) {
        if let housekeepingTimer { eventLoop.cancelTimer(housekeepingTimer) }
        housekeepingAt = deadline
        // The timer holds the connection (strongly: close() cancels it, which lets go), so it can never fire
        // for a connection that is gone: with `unowned` a busy `serve --simulator` aborted at exit.
        housekeepingTimer = eventLoop.scheduleTimer(at: deadline) { [self] in
            self.housekeepingTimer = nil
            self.housekeepingAt = nil
            guard !self.closed else { return }
            self.perform(self.management.tick(now: .now()))
            self.scheduleHousekeeping()
        }
    }

    /// Makes sure housekeeping runs no later than `deadline`.
    private func housekeepingDue(by deadline: MonotonicInstant?) {
        guard !closed, let deadline else { return }
        if let at = housekeepingAt, at <= deadline { return }
        armHousekeeping(at: deadline)
    }
}
