#if canImport(Glibc)
import Glibc
#endif
internal import CLinux
internal import CNGHTTP2

/// One accepted HTTP/2 connection: the socket, its nghttp2 server session and its streams.
///
/// Owned by the `ServerLoop` of its event loop (which keeps it in a table by file descriptor); every call
/// happens on that loop. nghttp2 calls back into it through `Unmanaged` user data (see NGHTTP2Callbacks).
final class ServerConnection: LoopConnection, Flushable {
    let io: ByteStream
    var fd: Int32 { io.fd }
    let eventLoop: EventLoop
    let configuration: HTTP2Configuration
    let responder: HTTP2Responder
    private unowned let owner: ServerLoop
    private var session: OpaquePointer?
    var streams: [Int32: HTTP2Stream] = [:]
    private var lastStream: HTTP2Stream?
    /// The verified client certificate's names, set once after the TLS handshake (nil for h2c).
    var peerCertificate: PeerCertificateIdentity?

    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private var wantsWritable = false
    private var closed = false
    private var lastReadNanos = monotonicNanoseconds()
    private var pingOutstandingSince: UInt64?
    private var idleSinceNanos: UInt64? = monotonicNanoseconds()
    private var housekeepingTimer: TimerQueue<() -> Void>.ID?
    private var housekeepingAt: UInt64?
    private var goawayTimer: TimerQueue<() -> Void>.ID?
    private(set) var draining = false
    private var goawayFinalSent = false
    private var goawayDebug = ""
    /// When this connection reaches its (jittered) maximum age; nil = never.
    private var ageDeadlineNanos: UInt64?
    /// When calls still running after "max_age" are cut off.
    private var closeDeadlineNanos: UInt64?
    private var lastClientPingNanos: UInt64?
    private var pingStrikes = 0
    private var tooManyPings = false
    /// Request bytes held by this connection's streams and the window owed to the peer.
    private var ledger: ReceiveLedger
    private let budget: SharedReceiveBudget
    private var grantRetryTimer: TimerQueue<() -> Void>.ID?

    /// Takes over `io`, already registered with the loop under its fd (re-pointed here to this connection).
    init(io: ByteStream, owner: ServerLoop, responder: HTTP2Responder, configuration: HTTP2Configuration) throws {
        self.io = io
        self.owner = owner
        self.eventLoop = owner.eventLoop
        self.responder = responder
        self.configuration = configuration
        self.ledger = ReceiveLedger(limit: configuration.maxBufferedBytesPerConnection)
        self.budget = owner.receiveBudget
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
        if configuration.maxConnectionAgeMilliseconds > 0 {
            let jittered = Double(configuration.maxConnectionAgeMilliseconds) * Double.random(in: 0.9...1.1)
            ageDeadlineNanos = monotonicNanoseconds() + UInt64(jittered * 1_000_000)
        }
        eventLoop.replaceSource(fd: io.fd, with: self)
        eventLoop.modify(fd: io.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
        scheduleHousekeeping()
        needsFlush()
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var openStreamCount: Int { streams.count }

    // MARK: Events

    func handle(events: UInt32) {
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
                lastReadNanos = monotonicNanoseconds()
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
        let consumed = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if consumed < 0 {
            // A protocol error: nghttp2 queued a GOAWAY when it could; send it, then close.
            flush()
            close()
            return false
        }
        if tooManyPings {
            closeWithGoaway(errorCode: NGHTTP2_ENHANCE_YOUR_CALM.rawValue, debug: "too_many_pings")
            return false
        }
        return true
    }

    func needsFlush() {
        if !closed { eventLoop.flushAtEndOfIteration(self) }
    }

    /// Serialises what nghttp2 has to send and writes it to the socket.
    func flush() {
        guard !closed, let session else { return }
        while true {
            if outbound.count - outboundStart < configuration.connectionWriteBufferLimit {
                collectFrames(session)
                if closed { return }
            }
            if outboundStart == outbound.count { break }
            let result = outbound.withUnsafeBytes { bytes in
                io.write(UnsafeRawBufferPointer(rebasing: bytes[outboundStart...]))
            }
            switch result {
            case .bytes(let written):
                outboundStart += written
                if outboundStart == outbound.count {
                    outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
                    outboundStart = 0
                    continue
                }
                if outboundStart > 64 * 1024 && outboundStart * 2 > outbound.count {
                    outbound.removeFirst(outboundStart)  // a slow reader must not make the buffer grow forever
                    outboundStart = 0
                }
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
        while outbound.count - outboundStart < configuration.connectionWriteBufferLimit {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 {
                close()
                return
            }
            guard length > 0, let data else { return }
            outbound.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        }
    }

    private func setWantsWritable(_ wants: Bool) {
        guard wants != wantsWritable, !closed else { return }
        wantsWritable = wants
        let base = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        if !eventLoop.modify(fd: fd, events: wants ? base | EPOLLOUT.rawValue : base) { close() }
    }

    /// Closes the socket at once; open streams see `streamClosed` with CANCEL.
    func close() {
        guard !closed else { return }
        closed = true
        if let housekeepingTimer { eventLoop.cancelTimer(housekeepingTimer) }
        if let goawayTimer { eventLoop.cancelTimer(goawayTimer) }
        if let grantRetryTimer { eventLoop.cancelTimer(grantRetryTimer) }
        budget.subtract(ledger.held)
        ledger = ReceiveLedger(limit: configuration.maxBufferedBytesPerConnection)
        eventLoop.deregister(fd: fd)
        io.close(abort: false)
        let open = streams.values
        streams.removeAll()
        lastStream = nil
        for stream in open {
            stream.isClosed = true
            stream.delegate?.streamClosed(stream, errorCode: NGHTTP2_CANCEL.rawValue)
            stream.delegate = nil
        }
        owner.connectionClosed(self)
    }

    // MARK: Responses (called by HTTP2Stream)

    func submitResponse(_ stream: HTTP2Stream, head: HeaderBlock, endStream: Bool) {
        guard let session else { return }
        pingStrikes = 0  // sending headers resets the client's ping budget (keepalive.md)
        let rc: Int32
        if endStream {
            rc = nghttp2_submit_response(session, stream.id, head.pairs.baseAddress, head.count, nil)
        } else {
            var provider = nghttp2_data_provider()
            provider.read_callback = NGHTTP2Callbacks.readData
            rc = nghttp2_submit_response(session, stream.id, head.pairs.baseAddress, head.count, &provider)
        }
        if rc != 0 { resetStream(stream, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue) }
        needsFlush()
    }

    func resumeData(_ stream: HTTP2Stream) {
        guard let session else { return }
        _ = nghttp2_session_resume_data(session, stream.id)
    }

    func resetStream(_ stream: HTTP2Stream, errorCode: UInt32) {
        guard let session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, errorCode)
        needsFlush()
    }

    /// nghttp2's data source: body bytes, then EOF with trailers (NO_END_STREAM) or END_STREAM.
    func readData(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, capacity: Int,
                  flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = stream(streamID), let session else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let before = stream.bufferedBytes
        let count = stream.takePending(into: buffer, capacity: capacity)
        // Sending DATA resets the client's ping budget, as sending headers does (grpc chttp2 resets strikes
        // on every data or header frame it writes): grpcio's BDP probes ping on each DATA frame it reads, so
        // a long server stream would otherwise end in GOAWAY "too_many_pings".
        if count > 0 { pingStrikes = 0 }
        if stream.bufferedBytes == 0 && stream.ended {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if let trailers = stream.trailers {
                flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                let rc = nghttp2_submit_trailer(session, streamID, trailers.pairs.baseAddress, trailers.count)
                if rc != 0 { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
            }
            return count
        }
        if count == 0 {
            stream.deferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        let lowWater = configuration.streamWriteHighWatermark / 2
        if before > lowWater && stream.bufferedBytes <= lowWater {
            stream.delegate?.streamWritable(stream)
        }
        return count
    }

    // MARK: Callbacks from nghttp2 (see NGHTTP2Callbacks)

    /// The stream with this id; the last one looked up is remembered, since callbacks come in runs per stream.
    private func stream(_ id: Int32) -> HTTP2Stream? {
        if let last = lastStream, last.id == id { return last }
        let found = streams[id]
        lastStream = found
        return found
    }

    func beginHeaders(streamID: Int32) {
        let stream = HTTP2Stream(id: streamID, connection: self, eventLoop: eventLoop)
        streams[streamID] = stream
        lastStream = stream
        idleSinceNanos = nil
    }

    /// Collects one request header field; a list over the size limit is remembered and answered with 431.
    /// The value's String is made only for fields that are kept.
    func header(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let stream = stream(streamID), stream.delegate == nil, !stream.headSent else { return }
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > Int(configuration.maxHeaderListSize) {
            stream.headerListTooLarge = true
            return
        }
        if stream.headerListTooLarge { return }
        if name.first == UInt8(ascii: ":") {
            let text = String(decoding: value, as: UTF8.self)
            switch String(decoding: name, as: UTF8.self) {
            case ":method": stream.head.method = text
            case ":path": stream.head.path = text
            case ":scheme": stream.head.scheme = text
            case ":authority": stream.head.authority = text
            default: break
            }
        } else if !Self.isHopHeader(name) {
            stream.head.fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    /// Request fields no responder reads: `te` (always "trailers" for gRPC) and `content-length`.
    private static func isHopHeader(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        (name.count == 2 && name[0] == UInt8(ascii: "t") && name[1] == UInt8(ascii: "e"))
            || (name.count == 14 && name.elementsEqual("content-length".utf8))
    }

    func headersComplete(streamID: Int32, endStream: Bool) {
        guard let stream = stream(streamID) else { return }
        if stream.delegate == nil && !stream.headSent {
            if stream.headerListTooLarge {
                stream.respond(status: 431, fields: [], endStream: true)
            } else if draining && goawayFinalSent {
                stream.reset(errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
            } else {
                stream.delegate = responder.streamStarted(stream, head: stream.head)
                if stream.delegate == nil && !stream.headSent {
                    stream.respond(status: 404, fields: [], endStream: true)
                }
            }
        }
        if endStream, let delegate = stream.delegate { delegate.streamRequestEnded(stream) }
    }

    func dataChunk(streamID: Int32, _ data: UnsafeRawBufferPointer) {
        guard let stream = stream(streamID), let delegate = stream.delegate else {
            // Nobody keeps these bytes: their window goes back at once.
            grant([ReceiveLedger.Grant(stream: streamID, count: data.count)])
            return
        }
        budget.add(data.count)
        grant(ledger.received(data.count, stream: streamID, processHasRoom: budget.hasRoom))
        delegate.stream(stream, received: data)
    }

    // MARK: Flow control (the window is granted by hand, see ReceiveLedger)

    /// The stream's consumer let go of `count` request bytes (or all it holds, when nil).
    func release(streamID: Int32, count: Int?) {
        guard !closed else { return }
        let (released, grants) = ledger.release(
            count ?? ledger.held(by: streamID), stream: streamID, processHasRoom: budget.hasRoom)
        budget.subtract(released)
        grant(grants)
    }

    private func grant(_ grants: [ReceiveLedger.Grant]) {
        guard let session, !closed else { return }
        for grant in grants where grant.count > 0 {
            _ = nghttp2_session_consume(session, grant.stream, grant.count)
        }
        if !grants.isEmpty { needsFlush() }
        // Held back only by the process-wide cap: look again soon, since other connections release bytes
        // without telling this one. (Over its own budget, only its own streams' releases can help.)
        if grantRetryTimer == nil && ledger.owedBytes > 0 && ledger.held <= ledger.limit {
            grantRetryTimer = eventLoop.schedule(afterNanoseconds: 50_000_000) { [unowned self] in
                self.grantRetryTimer = nil  // unowned: close() cancels the timer
                self.grant(self.ledger.grantsIfRoom(processHasRoom: self.budget.hasRoom))
            }
        }
    }

    func dataEnded(streamID: Int32) {
        guard let stream = stream(streamID), let delegate = stream.delegate else { return }
        delegate.streamRequestEnded(stream)
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        let (released, grants) = ledger.streamClosed(streamID, processHasRoom: budget.hasRoom)
        budget.subtract(released)
        grant(grants)
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        if lastStream === stream { lastStream = nil }
        stream.isClosed = true
        stream.delegate?.streamClosed(stream, errorCode: errorCode)
        stream.delegate = nil
        if streams.isEmpty {
            let now = monotonicNanoseconds()
            idleSinceNanos = now
            if configuration.idleTimeoutMilliseconds > 0 {
                housekeepingDue(by: now + configuration.idleTimeoutMilliseconds * 1_000_000)
            }
            if draining { needsFlush() }
        }
    }

    /// A PING from the client (nghttp2 answers it). Too many, too often, or without calls when that is not
    /// permitted, and the connection ends with GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
    func clientPinged() {
        let now = monotonicNanoseconds()
        let tooSoon = lastClientPingNanos.map {
            now > $0 && now - $0 < configuration.minClientPingIntervalMilliseconds * 1_000_000
        } ?? false
        let withoutCalls = streams.isEmpty && !configuration.permitClientPingWithoutCalls
        lastClientPingNanos = now
        guard tooSoon || withoutCalls else { return }
        pingStrikes += 1
        // Inside nghttp2's receive callback nothing may be sent: receive() closes after mem_recv returns.
        if pingStrikes > configuration.maxPingStrikes { tooManyPings = true }
    }

    func pingAcknowledged() {
        pingOutstandingSince = nil
        if draining && !goawayFinalSent { sendFinalGoaway(debug: goawayDebug) }
    }

    // MARK: Connection management

    func closeNow() {
        flush()
        close()
    }

    /// Starts a graceful close (RFC 9113 §6.8): GOAWAY with the maximum stream id and a PING, then, once the
    /// PING returns (or after a timeout), GOAWAY with the last stream id really processed. Streams in
    /// flight finish; the connection closes when none is left.
    func beginGracefulClose() {
        beginGracefulClose(debug: "")
    }

    private func beginGracefulClose(debug: String) {
        guard !draining, !closed, let session else { return }
        draining = true
        goawayDebug = debug
        _ = nghttp2_submit_shutdown_notice(session)
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
        pingOutstandingSince = monotonicNanoseconds()
        housekeepingDue(by: pingOutstandingSince! + configuration.keepaliveTimeoutMilliseconds * 1_000_000)
        goawayTimer = eventLoop.schedule(afterNanoseconds: configuration.goawayPingTimeoutMilliseconds * 1_000_000) {
            [unowned self] in
            if !self.goawayFinalSent { self.sendFinalGoaway(debug: self.goawayDebug) }
        }
        needsFlush()
    }

    private func sendFinalGoaway(errorCode: UInt32 = NGHTTP2_NO_ERROR.rawValue, debug: String = "") {
        guard let session, !closed else { return }
        goawayFinalSent = true
        let last = nghttp2_session_get_last_proc_stream_id(session)
        var debugBytes = Array(debug.utf8)
        _ = debugBytes.withUnsafeMutableBufferPointer {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode, $0.baseAddress, $0.count)
        }
        needsFlush()
    }

    /// Closes now with GOAWAY `errorCode` and `debug` data (e.g. ENHANCE_YOUR_CALM "too_many_pings").
    func closeWithGoaway(errorCode: UInt32, debug: String) {
        draining = true
        sendFinalGoaway(errorCode: errorCode, debug: debug)
        flush()
        close()
    }

    /// Arms the connection's one timer for its next real deadline (idle, keepalive, PING answer, max age,
    /// end of the max-age grace), not a fixed tick: 10,000 idle connections must not mean 10,000 wake-ups a
    /// second. State changes that bring a deadline closer call `housekeepingDue(by:)`.
    private func scheduleHousekeeping() {
        guard !closed else { return }
        let now = monotonicNanoseconds()
        guard let next = nextDeadline(now: now) else { return }
        armHousekeeping(at: max(next, now + 10_000_000))
    }

    private func armHousekeeping(at deadline: UInt64) {
        if let housekeepingTimer { eventLoop.cancelTimer(housekeepingTimer) }
        housekeepingAt = deadline
        let now = monotonicNanoseconds()
        // unowned, not weak: a weak reference would give the connection a side table and slow every
        // retain/release of it; the timer is cancelled in close(), before the connection can go away.
        housekeepingTimer = eventLoop.schedule(afterNanoseconds: deadline > now ? deadline - now : 0) { [unowned self] in
            self.housekeepingTimer = nil
            self.housekeepingAt = nil
            guard !self.closed else { return }
            self.housekeeping(now: monotonicNanoseconds())
            self.scheduleHousekeeping()
        }
    }

    /// Makes sure housekeeping runs no later than `deadline`.
    private func housekeepingDue(by deadline: UInt64) {
        guard !closed else { return }
        if let at = housekeepingAt, at <= deadline { return }
        armHousekeeping(at: deadline)
    }

    /// The earliest moment something may have to happen, from the current state.
    private func nextDeadline(now: UInt64) -> UInt64? {
        let ms: UInt64 = 1_000_000
        var candidates: [UInt64] = []
        if let deadline = ageDeadlineNanos { candidates.append(deadline) }
        if let deadline = closeDeadlineNanos { candidates.append(deadline) }
        if configuration.idleTimeoutMilliseconds > 0, let since = idleSinceNanos, !draining {
            candidates.append(since + configuration.idleTimeoutMilliseconds * ms)
        }
        if let sent = pingOutstandingSince {
            candidates.append(sent + configuration.keepaliveTimeoutMilliseconds * ms)
        } else if configuration.keepaliveTimeMilliseconds > 0 {
            candidates.append(lastReadNanos + configuration.keepaliveTimeMilliseconds * ms)
        }
        return candidates.min()
    }

    private func housekeeping(now: UInt64) {
        guard let session else { return }
        if let deadline = ageDeadlineNanos, now >= deadline, !draining {
            ageDeadlineNanos = nil
            closeDeadlineNanos = now + configuration.maxConnectionAgeGraceMilliseconds * 1_000_000
            beginGracefulClose(debug: "max_age")
        }
        if let deadline = closeDeadlineNanos, now >= deadline {
            closeNow()  // the grace after max_age is over: calls still open are cut off
            return
        }
        let idle = configuration.idleTimeoutMilliseconds * 1_000_000
        // Saturating: timestamps taken during this pass may be later than `now`.
        func elapsed(since start: UInt64) -> UInt64 { now > start ? now - start : 0 }
        if idle > 0, let since = idleSinceNanos, elapsed(since: since) >= idle, !draining {
            closeWithGoaway(errorCode: NGHTTP2_NO_ERROR.rawValue, debug: "max_idle")
            return
        }
        let keepalive = configuration.keepaliveTimeMilliseconds * 1_000_000
        if let sent = pingOutstandingSince {
            if elapsed(since: sent) >= configuration.keepaliveTimeoutMilliseconds * 1_000_000 {
                closeWithGoaway(errorCode: NGHTTP2_NO_ERROR.rawValue, debug: "keepalive_timeout")
            }
        } else if keepalive > 0 && elapsed(since: lastReadNanos) >= keepalive {
            _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            pingOutstandingSince = now
            needsFlush()
        }
    }
}
