import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fake Redis on a loopback port that answers the first command of each connection with `reply`, one byte
/// every `interval`, or never (when `interval` is nil): a server slow in the way a timeout per wait cannot
/// see. Counts the reply bytes it has sent; `stop` closes every connection.
public final class TricklingRedis: @unchecked Sendable {
    public let port: Int
    private let reply: [UInt8]
    private let interval: Duration?
    private let listener: Int32
    private let lock = NSLock()
    private var connections: [Int32] = []
    private var sent = 0
    private var stopped = false

    /// Listens on `port` (a free one when nil).
    public init(port: Int? = nil, reply: [UInt8], interval: Duration?) throws {
        self.reply = reply
        self.interval = interval
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var one: Int32 = 1
        _ = setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port ?? 0).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 16) == 0 else {
            close(listener)
            throw CocoaError(.fileReadUnknown)
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in accepting() }.start()
    }

    /// The reply bytes sent so far, over all connections.
    public var bytesSent: Int { lock.withLock { sent } }

    /// Stops accepting and closes every connection (a client waiting for a reply then reads end of file).
    public func stop() {
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
