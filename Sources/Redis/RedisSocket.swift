internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// One TCP connection to Redis, the owner of its file descriptor: non-blocking, every wait (the connect,
/// each send, each receive) bounded by `timeout`, as hiredis's socket timeouts did. Sends never raise
/// SIGPIPE (MSG_NOSIGNAL), since a Redis that closed the connection must not stop the gateway.
package final class RedisSocket: RedisByteStream {
    private let fd: Int32
    private let timeoutMilliseconds: Int32

    /// Resolves `host` (getaddrinfo, as hiredis did) and connects to the first address that answers within
    /// `timeout`.
    package init(host: String, port: Int, timeout: Duration) throws(RedisConnectionFailure) {
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        timeoutMilliseconds = Int32(clamping: max(1, milliseconds))
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
            let attempt = Self.connect(info.pointee, timeoutMilliseconds: timeoutMilliseconds)
            if let fd = attempt.fd {
                self.fd = fd
                return
            }
            problem = attempt.problem
        }
        throw RedisConnectionFailure(kind: .connect, message: "cannot connect to \(host):\(port): \(problem)")
    }

    deinit { close(fd) }

    package func send(_ bytes: [UInt8]) throws(RedisConnectionFailure) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(RedisConnectionFailure) in try send(raw) }
        }.get()
    }

    /// Sends all of `bytes`, waiting at most `timeout` each time the socket's buffer is full.
    package func send(_ bytes: UnsafeRawBufferPointer) throws(RedisConnectionFailure) {
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
            try wait(for: Int16(POLLOUT), doing: "write")
        }
    }

    package func receive(into buffer: UnsafeMutableRawBufferPointer) throws(RedisConnectionFailure) -> Int {
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
            try wait(for: Int16(POLLIN), doing: "read")
        }
    }

    /// Waits until the socket is ready for `events`, at most `timeout`.
    private func wait(for events: Int16, doing what: String) throws(RedisConnectionFailure) {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&descriptor, 1, timeoutMilliseconds)
            if ready > 0 { return }  // ready, or an error the next call reports
            if ready == 0 {
                throw RedisConnectionFailure(
                    kind: .timeout, message: "Redis \(what) timed out after \(timeoutMilliseconds) ms")
            }
            let error = clinux_errno()
            guard error == EINTR else {
                throw RedisConnectionFailure(kind: .protocolError, message: "Redis \(what) failed: \(Self.text(error))")
            }
        }
    }

    /// A connected non-blocking socket to `info`'s address, or why not.
    private static func connect(_ info: addrinfo, timeoutMilliseconds: Int32) -> (fd: Int32?, problem: String) {
        let flags = Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)
        let fd = socket(info.ai_family, flags, info.ai_protocol)
        guard fd >= 0 else { return (nil, text(clinux_errno())) }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return (fd, "") }
        var error = clinux_errno()
        if error == EINPROGRESS {
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var ready: Int32
            repeat { ready = poll(&descriptor, 1, timeoutMilliseconds) } while ready < 0 && clinux_errno() == EINTR
            if ready == 0 {
                close(fd)
                return (nil, "timed out after \(timeoutMilliseconds) ms")
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
