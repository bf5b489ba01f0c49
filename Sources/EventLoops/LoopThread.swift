internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a joinable thread running `body`; returns its `pthread_t` (glibc's `unsigned long`, spelled `UInt`
/// because the C type reaches this file through an internal import, which a package function may not return).
package func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) -> UInt {
    final class Box {
        let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    // The thread starts with SIGPIPE blocked: OpenSSL writes with write(2), and a peer that reset the
    // connection must become EPIPE on that connection, not a signal that kills the process.
    var pipe = sigset_t()
    var previous = sigset_t()
    sigemptyset(&pipe)
    sigaddset(&pipe, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipe, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            box.body()
            return nil
        }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    _ = pthread_setname_np(thread, String(name.prefix(15)))
    return thread
}
