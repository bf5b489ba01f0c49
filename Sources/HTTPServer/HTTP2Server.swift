internal import CLinux
import EventLoops
import GatewayFoundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Which deadline closed a connection before it did any work.
public enum HandshakeDeadline: String, Sendable, CaseIterable {
    /// The TLS handshake did not finish in time.
    case tlsHandshake = "tls_handshake"
    /// TLS (if any) was done, but the HTTP/2 client preface and SETTINGS did not arrive in time.
    case http2Preface = "http2_preface"
}

/// A server's connections now, and what its handshake deadlines closed since it started.
public struct ConnectionStatistics: Sendable, Hashable {
    /// Established connections (these count against `maxConnections`).
    public var open: Int
    /// Connections still in their TLS handshake or before their HTTP/2 preface.
    public var pendingHandshakes: Int
    /// Connections each handshake deadline closed, since start.
    public var closedByDeadline: [HandshakeDeadline: Int]
    /// Connections closed in their handshake because a newer one from the same address went past
    /// `maxPendingHandshakesPerAddress`, since start.
    public var closedByAddressLimit: Int
    /// TLS handshakes completed since start, resumed ones included.
    public var tlsHandshakes: Int
    /// Of those, the handshakes that resumed an earlier session (by ticket or session id).
    public var resumedTLSHandshakes: Int
    /// GOAWAY frames sent since start, by error code (both frames of a graceful close count).
    public var goawaysSent: [HTTP2ErrorCode: Int]
}

/// A connection in its handshake, as the loops of a server name it to each other: the loop serving it, its
/// descriptor there, and a number that loop gave it (a descriptor is reused once closed).
struct PendingConnection: Sendable, Hashable {
    var loop: Int
    var fd: Int32
    var serial: UInt64
}

/// Live counts shared by the loops of one server.
final class ServerCounters: Sendable {
    private let open = Atomic<Int>(0)
    private let pending = Atomic<Int>(0)
    /// The pending connections per client address: locked once when a handshake starts and once when it ends,
    /// never on a call.
    private let pendingByAddress: Lock<PendingHandshakesByAddress<PendingConnection>>
    private let addressLimitClosed = Atomic<Int>(0)
    private let tlsDeadlineClosed = Atomic<Int>(0)
    private let prefaceDeadlineClosed = Atomic<Int>(0)
    private let tlsHandshakes = Atomic<Int>(0)
    private let resumedHandshakes = Atomic<Int>(0)
    /// At most a frame or two per connection: a lock costs nothing here.
    private let goaways = Lock<[HTTP2ErrorCode: Int]>([:])
    /// Request bytes held by every connection of the server.
    let receiveBudget: SharedReceiveBudget
    /// Told when a close leaves no connection held (established or pending).
    let idle = ConditionSignal()
    init(maxBufferedBytes: Int, maxPendingHandshakesPerAddress: Int = 0) {
        receiveBudget = SharedReceiveBudget(limit: maxBufferedBytes)
        pendingByAddress = Lock(PendingHandshakesByAddress(limit: maxPendingHandshakesPerAddress))
    }
    func connectionOpened() { open.add(1, ordering: .relaxed) }
    /// An established connection closed; the last one held wakes whoever waits for none.
    func connectionClosed() {
        if open.subtract(1, ordering: .relaxed).newValue == 0 && pendingHandshakes == 0 { idle.signal() }
    }
    /// `connection`, from `address`, began its handshake; returns the pending connection of that address to
    /// close when it now holds more than its limit (`PendingHandshakesByAddress`).
    func handshakeStarted(_ connection: PendingConnection, from address: PeerAddress) -> PendingConnection? {
        pending.add(1, ordering: .relaxed)
        return pendingByAddress.withLock { $0.started(connection, from: address) }
    }
    /// `connection` left its handshake: closed, or established (counted open first, so that the server never
    /// reads as holding none in between); the last one held wakes whoever waits for none.
    func handshakeEnded(_ connection: PendingConnection) {
        let none = pending.subtract(1, ordering: .relaxed).newValue == 0
        pendingByAddress.withLock { $0.ended(connection) }
        if none && openConnections == 0 { idle.signal() }
    }
    /// A pending connection was closed for its address's limit.
    func closedByAddressLimit() { addressLimitClosed.add(1, ordering: .relaxed) }
    func closed(by deadline: HandshakeDeadline) {
        switch deadline {
        case .tlsHandshake: tlsDeadlineClosed.add(1, ordering: .relaxed)
        case .http2Preface: prefaceDeadlineClosed.add(1, ordering: .relaxed)
        }
    }
    func tlsHandshakeDone(resumed: Bool) {
        tlsHandshakes.add(1, ordering: .relaxed)
        if resumed { resumedHandshakes.add(1, ordering: .relaxed) }
    }
    func goawaySent(_ code: HTTP2ErrorCode) { goaways.withLock { $0[code, default: 0] += 1 } }
    var openConnections: Int { open.load(ordering: .relaxed) }
    var pendingHandshakes: Int { pending.load(ordering: .relaxed) }
    var statistics: ConnectionStatistics {
        ConnectionStatistics(
            open: openConnections, pendingHandshakes: pendingHandshakes,
            closedByDeadline: [
                .tlsHandshake: tlsDeadlineClosed.load(ordering: .relaxed),
                .http2Preface: prefaceDeadlineClosed.load(ordering: .relaxed),
            ],
            closedByAddressLimit: addressLimitClosed.load(ordering: .relaxed),
            tlsHandshakes: tlsHandshakes.load(ordering: .relaxed),
            resumedTLSHandshakes: resumedHandshakes.load(ordering: .relaxed),
            goawaysSent: goaways.withLock { $0 })
    }
}

/// Spreads a server's connections evenly over its loops. Each loop accepts on its own SO_REUSEPORT listener,
/// where the kernel's hash of the client's address and port sends a connection; a loop that already serves
/// more connections than the least busy one hands the new connection to that loop (one task on its inbox).
/// So a fleet's few long-lived connections (64 over 8 loops) are not left piled on some loops by the luck of
/// the hash. Only accepts and closes touch the counts, never a call.
final class ConnectionSpread: Sendable {
    /// One loop's count, alone on its cache line.
    private final class Count: Sendable {
        let value = Atomic<Int>(0)
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
        var current: Int { value.load(ordering: .relaxed) }
    }

    private let counts: [Count]
    /// The loops, installed once before any of them runs.
    private let loops = Lock<[LoopBound<ServerLoop>]>([])

    init(loops: Int) {
        counts = (0..<max(1, loops)).map { _ in Count() }
    }

    /// Sets the loops (before any runs), or lets go of them (`[]`, once they stopped): every loop holds the
    /// spread, so its list of them is a cycle until then.
    func install(_ loops: [LoopBound<ServerLoop>]) {
        self.loops.withLock { $0 = loops }
    }

    /// Connections each loop serves or is about to (handed over, not yet adopted).
    var perLoop: [Int] { counts.map(\.current) }

    /// Where the connection `loop` just accepted is served, counted there: `loop` itself unless another loop
    /// serves fewer (the least busy one, the lowest index among equals).
    func destination(acceptedBy loop: Int) -> Int {
        var chosen = loop
        var fewest = counts[loop].current
        for (index, count) in counts.enumerated() {
            let serving = count.current
            if serving < fewest { (chosen, fewest) = (index, serving) }
        }
        counts[chosen].value.add(1, ordering: .relaxed)
        return chosen
    }

    /// A connection of `loop` closed (or never became one).
    func removed(from loop: Int) {
        counts[loop].value.subtract(1, ordering: .relaxed)
    }

    /// Hands the accepted descriptor `fd`, from `peer`, to `loop`, which serves it. Should that loop have
    /// stopped, the descriptor is closed (the task holding it is let go).
    func hand(_ fd: Int32, from peer: PeerAddress, to loop: Int) {
        let handed = HandedDescriptor(fd)
        guard let target = loops.withLock({ $0.indices.contains(loop) ? $0[loop] : nil }) else {
            removed(from: loop)
            return
        }
        target.execute { serverLoop in
            if let fd = handed.take() { serverLoop.adopt(fd, from: peer) }
        }
    }

    /// Closes the pending `connection` on its loop, unless it has left its handshake meanwhile.
    func closePending(_ connection: PendingConnection) {
        guard let target = loops.withLock({ $0.indices.contains(connection.loop) ? $0[connection.loop] : nil })
        else { return }
        target.execute { $0.closePending(connection) }
    }
}

/// An accepted descriptor on its way to another loop: closed when it is let go without being taken.
private final class HandedDescriptor: Sendable {
    private let fd: Atomic<Int32>

    init(_ fd: Int32) { self.fd = Atomic(fd) }

    /// The descriptor, once.
    func take() -> Int32? {
        let taken = fd.exchange(-1, ordering: .relaxed)
        return taken >= 0 ? taken : nil
    }

    deinit {
        if let fd = take() { close(fd) }
    }
}

/// An HTTP/2 server (cleartext, prior knowledge) on `threads` epoll loops, each with its own SO_REUSEPORT
/// listener: the kernel spreads connections across loops, `ConnectionSpread` evens out what it leaves
/// uneven, and no lock sits on the request path.
public final class HTTP2Server: Sendable {
    /// The port actually bound (useful when 0 was configured).
    public let port: UInt16
    /// The server's event loops, one per thread.
    public let eventLoops: [EventLoop]
    private let loops: [LoopBound<ServerLoop>]
    private let counters: ServerCounters
    private let spread: ConnectionSpread
    private let threads = Lock<[LoopThread]>([])
    /// The loop threads' names, `<threadName>-<index>` (what `top -H`, `ps -L` and profilers show).
    private let threadName: String

    /// Binds every loop's listener; `start()` begins serving, on threads named `threadName-0`, `-1`, ….
    /// `onGoaway` hears every GOAWAY a connection sends (on that connection's loop: keep it short).
    public init(
        address: ListenAddress, threads: Int, configuration: HTTP2Configuration,
        transport: ServerTransport = .cleartextHTTP2, responder: any HTTP2Responder,
        requestHandler: (any HTTPRequestHandler)? = nil, threadName: String = "h2-loop",
        onGoaway: (@Sendable (SentGoaway) -> Void)? = nil
    ) throws(SystemError) {
        self.threadName = threadName
        let count = max(1, threads)
        let counters = ServerCounters(
            maxBufferedBytes: configuration.maxBufferedBytes,
            maxPendingHandshakesPerAddress: configuration.maxPendingHandshakesPerAddress)
        self.counters = counters
        let spread = ConnectionSpread(loops: count)
        self.spread = spread
        let first = try ListeningSocket(address: address)
        var loops: [LoopBound<ServerLoop>] = []
        var eventLoops: [EventLoop] = []
        for index in 0..<count {
            let listener = index == 0 ? first : try ListeningSocket(sameAs: address, port: first.port)
            let eventLoop = try EventLoop(index: index)
            let serverLoop = try ServerLoop(
                eventLoop: eventLoop, listener: listener, transport: transport, responder: responder,
                requestHandler: requestHandler, configuration: configuration, counters: counters, spread: spread,
                onGoaway: onGoaway)
            loops.append(LoopBound(serverLoop, beforeStartOf: eventLoop))
            eventLoops.append(eventLoop)
        }
        spread.install(loops)
        self.port = first.port
        self.loops = loops
        self.eventLoops = eventLoops
    }

    /// The number of established client connections across all loops.
    public var openConnections: Int { counters.openConnections }

    /// The connections each loop serves (established or in their handshake), by loop index.
    public var connectionsPerLoop: [Int] { spread.perLoop }

    /// Established and pending connections, and what the handshake deadlines closed.
    public var connectionStatistics: ConnectionStatistics { counters.statistics }

    /// Every descriptor the server's connections hold: established ones and those in their handshake.
    public var heldConnections: Int { counters.openConnections + counters.pendingHandshakes }

    /// Waits until the server holds no connection (`heldConnections` is 0) or `deadline` passes; true when it
    /// holds none. Woken by the close of the last connection, not by polling.
    public func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        counters.idle.wait(until: deadline) { counters.openConnections + counters.pendingHandshakes > 0 }
    }

    /// Request bytes held by the server's connections now (received, not yet taken by handlers).
    public var bufferedRequestBytes: Int { counters.receiveBudget.held }

    /// Starts one thread per event loop.
    public func start() {
        var started: [LoopThread] = []
        for (index, loop) in loops.enumerated() {
            let eventLoop = loop.eventLoop
            started.append(spawnThread(name: "\(threadName)-\(index)") { eventLoop.run() })
        }
        threads.withLock { $0 = started }
    }

    /// Stops accepting and sends the two-step GOAWAY on every connection; in-flight streams go on.
    public func beginGracefulShutdown() {
        for loop in loops { loop.execute { $0.beginDrain() } }
    }

    /// Closes every remaining connection at once.
    public func closeAllConnections() {
        for loop in loops { loop.execute { $0.closeAll() } }
    }

    /// Closes the listeners and every connection still open, stops the loops and waits for their threads.
    public func stop() {
        for loop in loops { loop.execute { $0.shutDown() } }
        for loop in eventLoops { loop.stop() }
        for thread in threads.withLock({ $0 }) { thread.join() }
        threads.withLock { $0 = [] }
        spread.install([])  // each loop holds the spread, which held them all
    }

    deinit {
        spread.install([])  // never started or stopped: the loops and the spread still hold each other
    }
}
