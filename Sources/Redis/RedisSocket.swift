internal import CLinux
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// One TCP connection to Redis, the owner of its file descriptor: non-blocking, every wait (the connect,
/// each send, each receive) bounded by the `RedisDeadline` of the operation it belongs to, read on `clock`.
/// Sends never raise SIGPIPE (MSG_NOSIGNAL), since a Redis that closed the connection must not stop the gateway.
package final class RedisSocket: RedisByteStream {
    private let fd: Int32
    private let clock: any GatewayClock

    /// Resolves `host` (getaddrinfo, as hiredis did) and connects to the first address that answers before
    /// `deadline`.
    package init(host: String, port: Int, deadline: RedisDeadline, clock: any GatewayClock)
        throws(RedisConnectionFailure)
    {
        self.clock = clock
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            let reason = String(cString: gai_strerror(rc))
            throw RedisConnectionFailure(kind: .connect, message: "cannot resolve \(host): \(reason)")
        }
        defer { freeaddrinfo(first) }
        var problem = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let attempt = Self.connect(info.pointee, deadline: deadline, clock: clock)
            if let fd = attempt.fd {
                self.fd = fd
                return
            }
            problem = attempt.problem
        }
        throw RedisConnectionFailure(kind: .connect, message: "cannot connect to \(host):\(port): \(problem)")
    }

    deinit { close(fd) }

    package func send(_ bytes: [UInt8], before deadline: RedisDeadline) throws(RedisConnectionFailure) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(RedisConnectionFailure) in try send(raw, before: deadline) }
        }.get()
    }

    /// Sends all of `bytes`, waiting while the socket's buffer is full, until `deadline` at the latest.
    package func send(_ bytes: UnsafeRawBufferPointer, before deadline: RedisDeadline) throws(RedisConnectionFailure) {
        guard let base = bytes.baseAddress else { return }
        var sent = 0
        while sent < bytes.count {
            let n = Glibc.send(fd, base + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if n > 0 {
                sent += n
                continue
            }
            let error = clinux_errno()
            if n < 0 && error == EINTR { continue }
            guard n < 0, error == EAGAIN || error == EWOULDBLOCK else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis write failed: \(Self.text(error))")
            }
            try wait(for: Int16(POLLOUT), doing: "write", before: deadline)
        }
    }

    package func receive(into buffer: UnsafeMutableRawBufferPointer, before deadline: RedisDeadline)
        throws(RedisConnectionFailure) -> Int
    {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        while true {
            let n = recv(fd, base, buffer.count, 0)
            if n > 0 { return n }
            if n == 0 {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis closed the connection")
            }
            let error = clinux_errno()
            if error == EINTR { continue }
            guard error == EAGAIN || error == EWOULDBLOCK else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis read failed: \(Self.text(error))")
            }
            try wait(for: Int16(POLLIN), doing: "read", before: deadline)
        }
    }

    /// Waits until the socket is ready for `events`, until `deadline` at the latest.
    private func wait(for events: Int16, doing what: String, before deadline: RedisDeadline)
        throws(RedisConnectionFailure)
    {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        while true {
            guard let milliseconds = deadline.pollMilliseconds(at: clock.monotonicNow()) else {
                throw deadline.failure(doing: what)
            }
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return }  // ready, or an error the next call reports
            if ready == 0 { continue }  // the deadline, checked above, decides
            let error = clinux_errno()
            guard error == EINTR else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis \(what) failed: \(Self.text(error))")
            }
        }
    }

    /// A connected non-blocking socket to `info`'s address, or why not.
    private static func connect(_ info: addrinfo, deadline: RedisDeadline, clock: any GatewayClock) -> (
        fd: Int32?, problem: String
    ) {
        let flags = Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)
        let fd = socket(info.ai_family, flags, info.ai_protocol)
        guard fd >= 0 else { return (nil, text(clinux_errno())) }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return (fd, "") }
        var error = clinux_errno()
        if error == EINPROGRESS {
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var ready: Int32 = 0
            while ready == 0 || (ready < 0 && clinux_errno() == EINTR) {
                guard let milliseconds = deadline.pollMilliseconds(at: clock.monotonicNow()) else {
                    close(fd)
                    return (nil, deadline.failure(doing: "connect").message)
                }
                ready = poll(&descriptor, 1, milliseconds)
            }
            var length = socklen_t(MemoryLayout<Int32>.size)
            error = ready < 0 ? clinux_errno() : 0
            if ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = clinux_errno() }
            if error == 0 { return (fd, "") }
        }
        close(fd)
        return (nil, text(error))
    }

    private static func text(_ error: Int32) -> String { String(cString: strerror(error)) }
}
