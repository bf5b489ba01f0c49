import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP port that takes connections (the kernel completes them from the backlog) and never answers or
/// accepts: a client waits there for its server's first byte until its own deadline. Closed when let go.
package final class SilentListener: Sendable {
    package let port: Int
    private let fd: Int32

    package init() throws {
        (fd, port) = try loopbackSocket(backlog: 16)
    }

    deinit { close(fd) }
}
