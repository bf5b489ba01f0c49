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
    /// TLS handshakes completed since start, resumed ones included.
    public var tlsHandshakes: Int
    /// Of those, the handshakes that resumed an earlier session (by ticket or session id).
    public var resumedTLSHandshakes: Int
}

/// Live counts shared by the loops of one server.
final class ServerCounters: Sendable {
    private let open = Atomic<Int>(0)
    private let pending = Atomic<Int>(0)
    private let tlsDeadlineClosed = Atomic<Int>(0)
    private let prefaceDeadlineClosed = Atomic<Int>(0)
    private let tlsHandshakes = Atomic<Int>(0)
    private let resumedHandshakes = Atomic<Int>(0)
    /// Request bytes held by every connection of the server.
    let receiveBudget: SharedReceiveBudget
    init(maxBufferedBytes: Int) { receiveBudget = SharedReceiveBudget(limit: maxBufferedBytes) }
    func connectionOpened() { open.add(1, ordering: .relaxed) }
    func connectionClosed() { open.subtract(1, ordering: .relaxed) }
    func handshakeStarted() { pending.add(1, ordering: .relaxed) }
    func handshakeEnded() { pending.subtract(1, ordering: .relaxed) }
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
    var openConnections: Int { open.load(ordering: .relaxed) }
    var pendingHandshakes: Int { pending.load(ordering: .relaxed) }
    var statistics: ConnectionStatistics {
        ConnectionStatistics(
            open: openConnections, pendingHandshakes: pendingHandshakes,
            closedByDeadline: [
                .tlsHandshake: tlsDeadlineClosed.load(ordering: .relaxed),
                .http2Preface: prefaceDeadlineClosed.load(ordering: .relaxed),
            ],
            tlsHandshakes: tlsHandshakes.load(ordering: .relaxed),
            resumedTLSHandshakes: resumedHandshakes.load(ordering: .relaxed))
    }
}

/// An HTTP/2 server (cleartext, prior knowledge) on `threads` epoll loops, each with its own SO_REUSEPORT
/// listener, so the kernel spreads connections across loops and no lock sits on the request path.
public final class HTTP2Server: Sendable {
    /// The port actually bound (useful when 0 was configured).
    public let port: UInt16
    /// The server's event loops, one per thread.
    public let eventLoops: [EventLoop]
    private let loops: [LoopBound<ServerLoop>]
    private let counters: ServerCounters
    private let threads = Lock<[LoopThread]>([])
    /// The loop threads' names, `<threadName>-<index>` (what `top -H`, `ps -L` and profilers show).
    private let threadName: String

    /// Binds every loop's listener; `start()` begins serving, on threads named `threadName-0`, `-1`, ….
    public init(
        address: ListenAddress, threads: Int, configuration: HTTP2Configuration,
        transport: ServerTransport = .cleartextHTTP2, responder: HTTP2Responder,
        requestHandler: HTTPRequestHandler? = nil, threadName: String = "h2-loop"
    ) throws(SystemError) {
        self.threadName = threadName
        let count = max(1, threads)
        let counters = ServerCounters(maxBufferedBytes: configuration.maxBufferedBytes)
        self.counters = counters
        let first = try ListeningSocket(address: address)
        var loops: [LoopBound<ServerLoop>] = []
        var eventLoops: [EventLoop] = []
        for index in 0..<count {
            let listener = index == 0 ? first : try ListeningSocket(sameAs: address, port: first.port)
            let eventLoop = try EventLoop(index: index)
            let serverLoop = try ServerLoop(
                eventLoop: eventLoop, listener: listener, transport: transport, responder: responder,
                requestHandler: requestHandler, configuration: configuration, counters: counters)
            loops.append(LoopBound(serverLoop, beforeStartOf: eventLoop))
            eventLoops.append(eventLoop)
        }
        self.port = first.port
        self.loops = loops
        self.eventLoops = eventLoops
    }

    /// The number of established client connections across all loops.
    public var openConnections: Int { counters.openConnections }

    /// Established and pending connections, and what the handshake deadlines closed.
    public var connectionStatistics: ConnectionStatistics { counters.statistics }

    /// Every descriptor the server's connections hold: established ones and those in their handshake.
    public var heldConnections: Int { counters.openConnections + counters.pendingHandshakes }

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
    }
}
