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
        /// A connection's descriptor, and the address it came from.
        case accepted(Int32, peer: PeerAddress)
        /// Nothing is waiting.
        case wouldBlock
        /// accept failed with this errno (EMFILE, ENFILE, ENOBUFS, …); the connection stays queued.
        case failed(Int32)
    }

    /// Accepts one pending connection as a non-blocking socket with TCP_NODELAY.
    package func accept() -> Accepted {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if client >= 0 {
                var one: Int32 = 1
                _ = setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return .accepted(client, peer: PeerAddress(storage))
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

/// The IP address a connection came from, as 16 bytes: IPv6 as it is, IPv4 as its IPv4-mapped IPv6 form
/// (`::ffff:a.b.c.d`), so an IPv4 client on a dual-stack listener is one address either way.
public struct PeerAddress: Sendable, Hashable {
    /// The first and last 8 bytes, in network order.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The IPv4 address `a.b.c.d` given as the 32-bit number `a << 24 | b << 16 | c << 8 | d`.
    public init(ipv4: UInt32) {
        self.init(high: 0, low: 0xffff_0000_0000 | UInt64(ipv4))
    }

    /// Whether this is an IPv4 address (in its mapped form).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xffff }

    /// The address of `storage` (an accepted peer's); anything but IPv4 or IPv6 is the unspecified address.
    init(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
                }
            }
            self.init(ipv4: address)
        case AF_INET6:
            let bytes = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
            }
            let word = { (range: Range<Int>) in bytes[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            self.init(high: word(0..<8), low: word(8..<16))
        default:
            self.init(high: 0, low: 0)
        }
    }
}
