import Configuration
import EventLoops
import GatewayFoundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// Holds its loop, as a server's listener, connections, timers and tasks do.
private final class LoopHolder: EventSource, TimerTarget, Sendable {
    let loop: EventLoop
    init(_ loop: EventLoop) { self.loop = loop }
    func handle(events: UInt32) {}
    func timerFired() {}
}

/// Answers no request (every stream is nobody's).
private struct NobodyResponder: HTTP2Responder {
    func streamStarted(_ stream: any HTTPServerStream, head: HTTP2RequestHead) -> (any HTTP2StreamDelegate)? { nil }
}

@Suite struct LoopShutdownTests {
    /// What a loop still holds when it stops (a registered source, a timer's target) and a task handed to it
    /// afterwards are let go: each holds the loop, and kept by it they would keep it and themselves for good.
    @Test func aStoppedLoopLetsGoOfWhatItHeld() async throws {
        weak var source: LoopHolder?
        weak var timerTarget: LoopHolder?
        weak var lateTask: LoopHolder?
        weak var stoppedLoop: EventLoop?
        var pipeFDs: [Int32] = [-1, -1]
        try #require(pipe(&pipeFDs) == 0)
        defer { pipeFDs.forEach { close($0) } }
        do {
            let loop = try EventLoop(index: 0)
            stoppedLoop = loop
            let registered = LoopHolder(loop)
            let target = LoopHolder(loop)
            source = registered
            timerTarget = target
            let thread = spawnThread(name: "loop-stop-test") { loop.run() }
            let readEnd = pipeFDs[0]
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute {
                    try? loop.watch(fd: readEnd, events: 0x001, source: registered)  // EPOLLIN
                    _ = loop.scheduleTimer(at: .now() + .seconds(3600), target: target)
                    continuation.resume()
                }
            }
            loop.stop()
            thread.join()
            let late = LoopHolder(loop)
            lateTask = late
            loop.execute { _ = late }
        }
        #expect(source == nil)
        #expect(timerTarget == nil)
        #expect(lateTask == nil)
        #expect(stoppedLoop == nil)
    }

    /// `stop()` alone (no graceful shutdown, no `closeAllConnections()` first) closes the connections still
    /// open: none is held any more and the client reads the end of the stream. (This one never sends its
    /// preface, so it is held as a pending handshake: the server's counts include it either way.)
    @Test func stoppingAServerClosesTheConnectionsStillOpen() throws {
        let server = try HTTP2Server(
            address: ListenAddress(host: "127.0.0.1", port: 0), threads: 1, configuration: HTTP2Configuration(),
            responder: NobodyResponder())
        server.start()
        let client = try #require(connectedLoopbackClient(port: server.port))
        defer { close(client) }
        let deadline = MonotonicInstant.now() + .seconds(10)
        while server.heldConnections == 0 && MonotonicInstant.now() < deadline { usleep(1_000) }
        try #require(server.heldConnections == 1)

        server.stop()
        #expect(server.heldConnections == 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var last = 0
        repeat { last = read(client, &buffer, buffer.count) } while last > 0  // the server's SETTINGS, then EOF
        #expect(last == 0)
    }
}
