import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP socket bound to 127.0.0.1 on `port` (a free one when 0), listening when `backlog` is given: its descriptor
/// (the caller closes it) and the port it has.
package func loopbackSocket(port: Int = 0, backlog: Int32? = nil, reuseAddress: Bool = false) throws -> (
    fd: Int32, port: Int
) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if reuseAddress {
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound, backlog.map({ listen(fd, $0) == 0 }) ?? true else {
        close(fd)
        throw CocoaError(.fileReadUnknown)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
