internal import CLinux
import EventLoops
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// A connection kept in a loop's table: it can be asked to close gracefully or at once.
protocol LoopConnection: EventSource {
    var fd: Int32 { get }
    /// Stop taking new requests and close once the ones in flight are done.
    func beginGracefulClose()
    /// Close now.
    func closeNow()
}

/// What a server speaks on its port.
public enum ServerTransport: Sendable {
    /// HTTP/2 over cleartext with prior knowledge (h2c), as gRPC clients speak it.
    case cleartextHTTP2
    /// HTTP/1.1 over cleartext (the admin endpoint).
    case cleartextHTTP1
    /// TLS, then HTTP/2 or HTTP/1.1 as ALPN decides (no ALPN means HTTP/1.1).
    case tls(TLSContext)
}

/// What an HTTP/2 connection needs from whoever accepted it: its loop, the loop's read buffer and the
/// shared budgets, and a word when it closes. The server's `ServerLoop`, or a test driving a connection over
/// bytes in memory.
protocol ConnectionOwner: AnyObject {
    var eventLoop: EventLoop { get }
    /// One buffer for the loop's reads (reads never overlap on one thread).
    var readBuffer: UnsafeMutableRawBufferPointer { get }
    /// Request bytes held by all connections of the server, as this loop counts them.
    var receiveBudget: LoopReceiveBudget { get }
    /// The responder's repeated strings.
    var internTable: InternTable { get }
    /// The connection closed (its descriptor is free again).
    func connectionClosed(_ connection: any LoopConnection)
    /// The connection finished its handshake (TLS, and for HTTP/2 the client preface): from now on it counts as
    /// an open connection, and its handshake deadline no longer applies.
    func connectionEstablished(_ connection: any LoopConnection)
    /// An HTTP/2 connection sent a GOAWAY frame.
    func goawaySent(_ goaway: SentGoaway)
}

extension ConnectionOwner {
    /// Owners without handshake deadlines (a test driving a connection over bytes) have nothing to do.
    func connectionEstablished(_ connection: any LoopConnection) {}
    /// Owners that count nothing have nothing to do.
    func goawaySent(_ goaway: SentGoaway) {}
}

/// The server's share of one event loop: its SO_REUSEPORT listener and the connections accepted there.
final class ServerLoop: EventSource, ConnectionOwner {
    let eventLoop: EventLoop
    private var listener: ListeningSocket?
    let responder: any HTTP2Responder
    /// The responder's repeated strings, built once per loop.
    let internTable: InternTable
    let requestHandler: (any HTTPRequestHandler)?
    let configuration: HTTP2Configuration
    private let transport: ServerTransport
    private let counters: ServerCounters
    /// Where a connection accepted here is served: this loop, or a loop holding fewer.
    private let spread: ConnectionSpread
    /// Hears every GOAWAY this loop's connections send (a log line), on the loop.
    private let onGoaway: (@Sendable (SentGoaway) -> Void)?
    private var connections: [Int32: any LoopConnection] = [:]
    /// A connection of `connections` still in its handshake.
    private struct Handshake {
        /// How the server's loops name it (`ServerCounters` counts it per address under this name).
        var name: PendingConnection
        /// The timer of its deadline (nil when `handshakeTimeout` is nil, or once it fired).
        var timer: IOLoopTimer?
    }
    /// The connections of `connections` still in their handshake, by descriptor.
    private var handshakes: [Int32: Handshake] = [:]
    /// Numbers the loop's pending connections (`PendingConnection.serial`).
    private var handshakeSerial: UInt64 = 0
    private var draining = false
    /// True while the listener is out of epoll (connection cap or descriptor limit reached).
    private var listenerPaused = false
    private var resumeTimer: IOLoopTimer?
    /// One read buffer shared by the loop's connections (reads never overlap on one thread); owned here.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(
        eventLoop: EventLoop, listener: ListeningSocket, transport: ServerTransport, responder: any HTTP2Responder,
        requestHandler: (any HTTPRequestHandler)?, configuration: HTTP2Configuration,
        counters: ServerCounters, spread: ConnectionSpread, onGoaway: (@Sendable (SentGoaway) -> Void)? = nil
    ) throws(SystemError) {
        self.onGoaway = onGoaway
        self.eventLoop = eventLoop
        self.listener = listener
        self.transport = transport
        self.responder = responder
        self.internTable = responder.internTable
        self.requestHandler = requestHandler
        self.configuration = configuration
        self.counters = counters
        self.spread = spread
        receiveBudget = LoopReceiveBudget(counters.receiveBudget)
        try eventLoop.watch(fd: listener.fd, events: EPOLLIN.rawValue, source: self)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Request bytes held by all connections of the server, as this loop counts them.
    let receiveBudget: LoopReceiveBudget

    func handle(events: UInt32) {
        guard let listener, !listenerPaused else { return }
        // Accept a bounded batch per wake-up; level-triggered epoll brings us back for the rest.
        for _ in 0..<64 {
            if case .pause(let delay) = AcceptBackoff.beforeAccept(
                openConnections: counters.openConnections, maxConnections: configuration.maxConnections,
                pendingHandshakes: counters.pendingHandshakes,
                maxPendingHandshakes: configuration.maxPendingHandshakes)
            {
                pauseListener(delay)
                return
            }
            let fd: Int32
            let peer: PeerAddress
            switch listener.accept() {
            case .accepted(let accepted, let address):
                (fd, peer) = (accepted, address)
            case .wouldBlock:
                return
            case .failed(let errno):
                // EMFILE/ENFILE: the connection stays queued and the listener readable; polling it now would spin.
                if case .pause(let delay) = AcceptBackoff.afterAcceptFailure(errno: errno) {
                    pauseListener(delay)
                }
                return
            }
            let destination = spread.destination(acceptedBy: eventLoop.index)
            if destination != eventLoop.index {
                spread.hand(fd, from: peer, to: destination)
                continue
            }
            adopt(fd, from: peer)
        }
    }

    /// Serves the accepted descriptor `fd`, from `peer`, on this loop (accepted here, or handed over by another
    /// loop of the server, `ConnectionSpread`), which already counts it: registered, wrapped in its connection,
    /// its handshake deadline armed. A loop that is draining closes it at once.
    func adopt(_ fd: Int32, from peer: PeerAddress) {
        guard !draining else {
            close(fd)
            spread.removed(from: eventLoop.index)
            return
        }
        do {
            try eventLoop.watch(fd: fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue, source: PendingSource())
        } catch {
            close(fd)
            spread.removed(from: eventLoop.index)
            return
        }
        // The byte stream owns the descriptor from here on: on failure it alone closes it.
        let connection: (any LoopConnection)?
        switch transport {
        case .cleartextHTTP2:
            let stream = SocketStream(fd: fd)
            connection = try? ServerConnection(
                io: stream, owner: self, responder: responder, configuration: configuration)
            if connection == nil { eventLoop.unwatch(fd: fd); stream.close(abort: true) }
        case .cleartextHTTP1:
            let stream = SocketStream(fd: fd)
            connection = requestHandler.map { HTTP1Connection(io: stream, owner: self, handler: $0) }
            if connection == nil { eventLoop.unwatch(fd: fd); stream.close(abort: true) }
        case .tls(let context):
            do {
                connection = try TLSHandshake(fd: fd, context: context, owner: self)
            } catch {
                eventLoop.unwatch(fd: fd)  // the TLS stream closed the descriptor it was given
                connection = nil
            }
        }
        guard let connection else {
            spread.removed(from: eventLoop.index)
            return
        }
        connections[fd] = connection
        if case .cleartextHTTP1 = transport {
            counters.connectionOpened()  // no handshake: its request-head deadline bounds a silent socket
        } else {
            startHandshake(fd: fd, from: peer)
        }
    }

    /// Counts the connection on `fd` as pending, arms its handshake deadline, and closes the oldest pending
    /// connection of its address when that address now holds more than `maxPendingHandshakesPerAddress`.
    private func startHandshake(fd: Int32, from peer: PeerAddress) {
        handshakeSerial &+= 1
        let name = PendingConnection(loop: eventLoop.index, fd: fd, serial: handshakeSerial)
        var handshake = Handshake(name: name, timer: nil)
        if let timeout = configuration.handshakeTimeout, timeout > .zero {
            // unowned: the server loop lives as long as its event loop runs; `connectionClosed` cancels the timer.
            handshake.timer = eventLoop.scheduleTimer(after: timeout) { [unowned self] in
                self.handshakeDeadlinePassed(fd: fd)
            }
        }
        handshakes[fd] = handshake
        guard let evicted = counters.handshakeStarted(name, from: peer) else { return }
        if evicted.loop == eventLoop.index {
            closePending(evicted)
        } else {
            spread.closePending(evicted)
        }
    }

    /// The connection on `fd` is still in its handshake at its deadline: it is closed and counted.
    private func handshakeDeadlinePassed(fd: Int32) {
        guard handshakes[fd] != nil, let connection = connections[fd] else { return }
        handshakes[fd]?.timer = nil  // fired: nothing left to cancel
        counters.closed(by: connection is TLSHandshake ? .tlsHandshake : .http2Preface)
        connection.closeNow()
    }

    /// Closes `pending`, pushed out by a newer connection of its address, unless it has left its handshake
    /// since (its descriptor closed, maybe reused: the serial tells).
    func closePending(_ pending: PendingConnection) {
        guard let handshake = handshakes[pending.fd], handshake.name == pending,
            let connection = connections[pending.fd]
        else { return }
        counters.closedByAddressLimit()
        connection.closeNow()
    }

    func connectionEstablished(_ connection: any LoopConnection) {
        guard let current = connections[connection.fd], current === connection,
            let handshake = handshakes.removeValue(forKey: connection.fd)
        else { return }
        if let timer = handshake.timer { eventLoop.cancelTimer(timer) }
        counters.connectionOpened()  // before the handshake ends: never held by none in between
        counters.handshakeEnded(handshake.name)
        // Accepted below the cap while in its handshake, established above it (others got there first): the
        // cap holds, and the client is told to go elsewhere before it starts a call.
        if configuration.maxConnections > 0 && counters.openConnections > configuration.maxConnections {
            connection.beginGracefulClose()
        }
        if listenerPaused { resumeListener() }  // a handshake slot is free again
    }

    /// Counted for `ConnectionStatistics` and told to the server's observer.
    func goawaySent(_ goaway: SentGoaway) {
        counters.goawaySent(goaway.code)
        onGoaway?(goaway)
    }

    /// A TLS handshake completed (counted for `ConnectionStatistics`).
    func tlsHandshakeDone(resumed: Bool) { counters.tlsHandshakeDone(resumed: resumed) }

    /// A connection object took over from another one on the same descriptor (TLS handshake done).
    func connectionReplaced(_ connection: any LoopConnection) {
        connections[connection.fd] = connection
        if draining { connection.beginGracefulClose() }
    }

    func connectionClosed(_ connection: any LoopConnection) {
        guard let current = connections[connection.fd], current === connection else { return }
        connections[connection.fd] = nil
        spread.removed(from: eventLoop.index)
        if let handshake = handshakes.removeValue(forKey: connection.fd) {
            if let timer = handshake.timer { eventLoop.cancelTimer(timer) }
            counters.handshakeEnded(handshake.name)
        } else {
            counters.connectionClosed()
        }
        if listenerPaused { resumeListener() }  // a descriptor and a slot are free again
    }

    /// Takes the listener out of epoll until a connection closes or `delay` passes.
    private func pauseListener(_ delay: Duration) {
        guard let listener, !listenerPaused else { return }
        listenerPaused = true
        eventLoop.rewatch(fd: listener.fd, events: 0)
        resumeTimer = eventLoop.scheduleTimer(after: delay) { [unowned self] in
            self.resumeTimer = nil  // unowned: the server loop lives as long as its event loop runs
            self.resumeListener()
        }
    }

    private func resumeListener() {
        guard listenerPaused else { return }
        listenerPaused = false
        if let resumeTimer { eventLoop.cancelTimer(resumeTimer) }
        resumeTimer = nil
        if let listener { eventLoop.rewatch(fd: listener.fd, events: EPOLLIN.rawValue) }
    }

    /// Stops accepting and starts a graceful close of every connection.
    func beginDrain() {
        stopAccepting()
        for connection in connections.values { connection.beginGracefulClose() }
    }

    /// Closes every connection now.
    func closeAll() {
        for connection in Array(connections.values) { connection.closeNow() }
    }

    /// The loop is about to stop: the listener closes and so does every connection, so that nothing of this
    /// server stays registered with (and held by) the loop.
    func shutDown() {
        stopAccepting()
        closeAll()
    }

    private func stopAccepting() {
        draining = true
        if let resumeTimer { eventLoop.cancelTimer(resumeTimer) }
        resumeTimer = nil
        if let listener {
            eventLoop.unwatch(fd: listener.fd)
            self.listener = nil
        }
    }
}

/// Holds a freshly accepted descriptor's registration until its connection object takes it over.
private final class PendingSource: EventSource {
    func handle(events: UInt32) {}
}

/// A TLS handshake in progress; when it completes, ALPN picks the connection that takes over the socket.
final class TLSHandshake: LoopConnection {
    let fd: Int32
    private let stream: TLSStream
    private unowned let owner: ServerLoop
    private var done = false

    init(fd: Int32, context: TLSContext, owner: ServerLoop) throws(TLSError) {
        self.fd = fd
        self.owner = owner
        self.stream = try TLSStream(fd: fd, context: context)
        owner.eventLoop.replaceSource(fd: fd, with: self)
    }

    func handle(events: UInt32) {
        guard !done else { return }
        switch stream.continueHandshake() {
        case .bytes:
            done = true
            owner.tlsHandshakeDone(resumed: stream.sessionReused)
            let next: (any LoopConnection)?
            if stream.negotiatedProtocol == "h2" {
                let connection = try? ServerConnection(
                    io: stream, owner: owner, responder: owner.responder, configuration: owner.configuration)
                connection?.peerCertificate = stream.peerCertificateIdentity
                next = connection
            } else {
                next = owner.requestHandler.map { HTTP1Connection(io: stream, owner: owner, handler: $0) }
            }
            if let next {
                owner.connectionReplaced(next)
                // HTTP/1.1 is established with TLS; HTTP/2 once its preface arrives (`ServerConnection`).
                if next is HTTP1Connection { owner.connectionEstablished(next) }
                // Application data may have arrived with the handshake's last flight.
                if stream.hasBufferedInput { next.handle(events: EPOLLIN.rawValue) }
            } else {
                tearDown()
            }
        case .wouldBlock(let wantsWrite):
            owner.eventLoop.rewatch(
                fd: fd, events: (wantsWrite ? EPOLLOUT.rawValue : EPOLLIN.rawValue) | EPOLLRDHUP.rawValue)
        case .closed, .failed:
            done = true
            tearDown()
        }
    }

    func beginGracefulClose() { closeNow() }

    func closeNow() {
        guard !done else { return }
        done = true
        tearDown()
    }

    private func tearDown() {
        owner.eventLoop.unwatch(fd: fd)
        stream.close(abort: false)
        owner.connectionClosed(self)
    }
}
