import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fake Redis on a loopback port that answers the first command of each connection with `reply`, one byte
/// every `interval`, or never (when `interval` is nil): a server slow in the way a timeout per wait cannot
/// see. Counts the reply bytes it has sent; `stop` closes every connection.
package final class TricklingRedis: @unchecked Sendable {
    package let port: Int
    private let reply: [UInt8]
    private let interval: Duration?
    private let listener: Int32
    private let lock = NSLock()
    private var connections: [Int32] = []
    private var sent = 0
    private var stopped = false

    /// Listens on `port` (a free one when nil).
    package init(port: Int? = nil, reply: [UInt8], interval: Duration?) throws {
        self.reply = reply
        self.interval = interval
        let (listener, bound) = try loopbackSocket(port: port ?? 0, backlog: 16, reuseAddress: true)
        self.listener = listener
        self.port = bound
        Thread { [self] in accepting() }.start()
    }

    /// The reply bytes sent so far, over all connections.
    package var bytesSent: Int { lock.withLock { sent } }

    /// Stops accepting and closes every connection (a client waiting for a reply then reads end of file).
    package func stop() {
        lock.withLock {
            stopped = true
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        stop()
        close(listener)
    }

    private func accepting() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }  // shut down
            let open = lock.withLock {
                if !stopped { connections.append(fd) }
                return !stopped
            }
            guard open else {
                close(fd)
                return
            }
            var one: Int32 = 1  // each byte sent as it is written
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            Thread { [self] in serve(fd) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            lock.withLock { connections.removeAll { $0 == fd } }
            close(fd)
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        guard recv(fd, &buffer, buffer.count, 0) > 0 else { return }  // the first command (or its start)
        guard let interval else {
            while recv(fd, &buffer, buffer.count, 0) > 0 {}  // never answers
            return
        }
        let pause = useconds_t(
            clamping: interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        for byte in reply {
            guard !lock.withLock({ stopped }), send(fd, [byte], 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            lock.withLock { sent += 1 }
            usleep(pause)
        }
        while recv(fd, &buffer, buffer.count, 0) > 0 {}  // until the client closes
    }
}
