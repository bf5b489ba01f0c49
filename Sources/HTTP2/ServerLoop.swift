#if canImport(Glibc)
import Glibc
#endif
internal import CLinux

/// The server's share of one event loop: its SO_REUSEPORT listener and the connections accepted there.
final class ServerLoop: EventSource {
    let eventLoop: EventLoop
    private var listener: ListeningSocket?
    private let responder: HTTP2Responder
    private let configuration: HTTP2Configuration
    private let counters: ServerCounters
    private var connections: [Int32: ServerConnection] = [:]
    /// One read buffer shared by the loop's connections (reads never overlap on one thread); owned here.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(eventLoop: EventLoop, listener: ListeningSocket, responder: HTTP2Responder,
         configuration: HTTP2Configuration, counters: ServerCounters) throws(SystemError) {
        self.eventLoop = eventLoop
        self.listener = listener
        self.responder = responder
        self.configuration = configuration
        self.counters = counters
        try eventLoop.register(fd: listener.fd, events: EPOLLIN.rawValue, source: self)
    }

    deinit {
        readBuffer.deallocate()
    }

    func handle(events: UInt32) {
        guard let listener else { return }
        // Accept a bounded batch per wake-up; level-triggered epoll brings us back for the rest.
        for _ in 0..<64 {
            guard let fd = listener.accept() else { return }
            do {
                let connection = try ServerConnection(
                    fd: fd, owner: self, responder: responder, configuration: configuration)
                connections[fd] = connection
                counters.connectionOpened()
            } catch {
                close(fd)
            }
        }
    }

    func connectionClosed(_ connection: ServerConnection) {
        if connections.removeValue(forKey: connection.fd) != nil { counters.connectionClosed() }
    }

    /// Stops accepting and starts a graceful close of every connection.
    func beginDrain() {
        if let listener {
            eventLoop.deregister(fd: listener.fd)
            self.listener = nil
        }
        for connection in connections.values { connection.beginGracefulClose() }
    }

    /// Closes every connection now.
    func closeAll() {
        for connection in Array(connections.values) {
            connection.flush()
            connection.close()
        }
    }
}
