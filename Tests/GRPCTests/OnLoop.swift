import EventLoops

/// Runs `body` on the thread of a fresh event loop numbered `index` and returns its result.
func onLoop<Result: Sendable>(index: Int = 0, _ body: @escaping @Sendable (EventLoop) -> Result) async throws
    -> Result
{
    let loop = try EventLoop(index: index)
    let thread = spawnThread(name: "test-loop-\(index)") { loop.run() }
    let result = await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: body(loop)) }
    }
    loop.stop()
    thread.join()
    return result
}
