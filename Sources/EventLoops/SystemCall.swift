internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call: which call, and errno.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The call that failed, e.g. "bind".
    public var call: String
    /// The errno value.
    public var errno: Int32

    /// The failure of `call` with `errno`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Runs a system call, retrying on EINTR; a negative result becomes a `SystemError`.
@inline(__always)
package func systemCall<T: BinaryInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = clinux_errno()
        if code == EINTR { continue }
        throw SystemError(call: name(), errno: code)
    }
}
