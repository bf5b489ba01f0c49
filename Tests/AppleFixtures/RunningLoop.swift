import EventLoops
import GatewayFoundation

/// An event loop on a joinable thread of its own, from `init` until `stop()` (or until it goes away): the loop an
/// `UpstreamHTTPClient` serves its callers on no loop on, or a loop for callers of the test's own.
package final class RunningLoop: Sendable {
    package let loop: EventLoop
    private let thread: LoopThread
    private let stopped = Lock(false)

    package init(index: Int = 0) throws {
        loop = try EventLoop(index: index)
        let loop = loop
        thread = spawnThread(name: "test-loop-\(index)") { loop.run() }
    }

    /// Stops the loop and waits for its thread. Idempotent.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        loop.stop()
        // Let go last on its own thread, the loop stops without a join (a thread cannot join itself).
        if !loop.inEventLoop { thread.join() }
    }

    deinit { stop() }

    /// Runs `body` in a task that prefers this loop (as a gRPC handler does).
    package func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        await Task(executorPreference: loop, operation: body).value
    }
}
