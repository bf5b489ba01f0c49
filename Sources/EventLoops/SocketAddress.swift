internal import CLinux
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// A listening TCP socket, non-blocking, with SO_REUSEPORT so each loop can own one on the same port.
package final class ListeningSocket {
    package let fd: Int32
    /// The bound port (the kernel's pick when 0 was asked).
    package let port: UInt16

    package init(address: ListenAddress, backlog: Int32 = 1024) throws(SystemError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(address.host, String(address.port), &hints, &result)
        guard rc == 0, let info = result else {
            throw SystemError(call: "getaddrinfo(\(address.host))", errno: rc == EAI_SYSTEM ? clinux_errno() : EINVAL)
        }
        defer { freeaddrinfo(info) }

        let fd = try systemCall("socket") {
            socket(
                info.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var one: Int32 = 1
            let size = socklen_t(MemoryLayout<Int32>.size)
            _ = try systemCall("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size) }
            _ = try systemCall("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size) }
            _ = try systemCall("bind(\(address))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            _ = try systemCall("listen") { listen(fd, backlog) }
            self.port = try Self.boundPort(fd)
        } catch {
            close(fd)
            throw error
        }
        self.fd = fd
    }

    /// Opens a socket on the same address and port as `other` (SO_REUSEPORT), for another loop.
    package convenience init(sameAs address: ListenAddress, port: UInt16) throws(SystemError) {
        try self.init(address: ListenAddress(host: address.host, port: port))
    }

    deinit { close(fd) }

    /// What one accept brought.
    package enum Accepted {
        case accepted(Int32)
        /// Nothing is waiting.
        case wouldBlock
        /// accept failed with this errno (EMFILE, ENFILE, ENOBUFS, …); the connection stays queued.
        case failed(Int32)
    }

    /// Accepts one pending connection as a non-blocking socket with TCP_NODELAY.
    package func accept() -> Accepted {
        while true {
            let client = accept4(fd, nil, nil, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            if client >= 0 {
                var one: Int32 = 1
                _ = setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return .accepted(client)
            }
            switch clinux_errno() {
            case EINTR: continue
            case ECONNABORTED, EPROTO: continue  // the peer gave up before we accepted; try the next one
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(clinux_errno())
            }
        }
    }

    private static func boundPort(_ fd: Int32) throws(SystemError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try systemCall("getsockname") { getsockname(fd, address, &length) }
            }
        }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        }
    }
}
