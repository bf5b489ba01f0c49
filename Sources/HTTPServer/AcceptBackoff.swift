#if canImport(Glibc)
    import Glibc
#endif

/// What a listener does when it is readable: accept, or stop polling it for a while. A level-triggered
/// listener that stays readable while accept fails (the descriptor limit) or while the connection cap is
/// reached must be taken out of epoll, or the loop spins. Pure: tested without sockets.
enum AcceptBackoff: Equatable {
    /// Accept the next connection.
    case accept
    /// Stop polling the listener; poll it again after this long or when a connection closes.
    case pause(Duration)

    /// How long a paused listener waits before it is polled again (a closing connection resumes it sooner).
    static let retryDelay: Duration = .milliseconds(100)

    /// Before an accept: the caps against the connections open now. `maxConnections` (0 = none) bounds the
    /// established connections; `maxPendingHandshakes` (0 = none) bounds those still in their TLS handshake or
    /// before their HTTP/2 preface, which never count against `maxConnections`: sockets that stay silent fill
    /// their own cap until their handshake deadline closes them, never the callers' one.
    static func beforeAccept(
        openConnections: Int, maxConnections: Int, pendingHandshakes: Int = 0, maxPendingHandshakes: Int = 0
    ) -> AcceptBackoff {
        if maxConnections > 0 && openConnections >= maxConnections { return .pause(retryDelay) }
        if maxPendingHandshakes > 0 && pendingHandshakes >= maxPendingHandshakes { return .pause(retryDelay) }
        return .accept
    }

    /// After accept failed with `errno` (EAGAIN and aborted handshakes never get here): out of descriptors
    /// or kernel memory pause the listener; anything else also pauses, since retrying at once would spin.
    static func afterAcceptFailure(errno: Int32) -> AcceptBackoff {
        .pause(retryDelay)
    }
}

/// Raises the soft limit of open descriptors to the hard limit (so the connection cap, not the default
/// soft limit of 1024, is what bounds connections). Returns the soft limit in force afterwards.
@discardableResult
public func raiseFileDescriptorLimit() -> UInt64 {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0 else { return 0 }
    if limit.rlim_cur < limit.rlim_max {
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        if setrlimit(resource, &raised) == 0 { return UInt64(raised.rlim_cur) }
    }
    return UInt64(limit.rlim_cur)
}
