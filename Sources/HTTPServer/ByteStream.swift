internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// The outcome of one read or write on a connection's byte stream.
enum IOResult {
    /// This many bytes moved.
    case bytes(Int)
    /// Nothing can move now; wait for readiness (`wantsWrite`: for EPOLLOUT rather than EPOLLIN).
    case wouldBlock(wantsWrite: Bool)
    /// The peer closed cleanly.
    case closed
    /// The stream failed; close the connection.
    case failed
}

/// A connection's bytes: the socket itself, or TLS over it. Owned by one connection, on its loop.
protocol ByteStream: AnyObject {
    var fd: Int32 { get }
    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult
    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult
    /// True when bytes are already buffered inside the stream (TLS records), so reading must go on
    /// even without socket readiness.
    var hasBufferedInput: Bool { get }
    /// Closes the socket; with `abort`, with a TCP reset (SO_LINGER 0) instead of a FIN.
    func close(abort: Bool)
}

/// The plain socket.
final class SocketStream: ByteStream {
    let fd: Int32
    private var closed = false

    init(fd: Int32) { self.fd = fd }

    deinit { close(abort: false) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        guard !closed else { return .failed }  // the number may already belong to another descriptor
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            switch clinux_errno() {
            case EINTR: continue
            case EAGAIN: return .wouldBlock(wantsWrite: false)
            default: return .failed
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard !closed else { return .failed }
        while true {
            let count = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .bytes(count) }
            switch clinux_errno() {
            case EINTR: continue
            case EAGAIN: return .wouldBlock(wantsWrite: true)
            default: return .failed
            }
        }
    }

    var hasBufferedInput: Bool { false }

    func close(abort: Bool) {
        guard !closed else { return }
        closed = true
        if abort {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
    }
}
