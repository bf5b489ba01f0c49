import Testing

@testable import EventLoops

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `loop` on a thread of its own until `body` (run on the loop) has answered; then stops it.
private func onLoop<Result: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> Result) async -> Result {
    let thread = spawnThread(name: "test-loop") { loop.run() }
    let result = await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: body()) }
    }
    loop.stop()
    thread.join()
    return result
}

@Suite struct LoopBoundTests {
    @Test func aLoopKnowsItsThreadOnlyWhileItRuns() async throws {
        let loop = try EventLoop(index: 0)
        #expect(!loop.inEventLoop && !loop.hasStarted)
        let inside = await onLoop(loop) { loop.inEventLoop }
        #expect(inside)
        #expect(!loop.inEventLoop)  // this thread is not the loop's
        #expect(loop.hasStarted)
    }

    @Test func aValueMadeOnItsLoopOpensThere() async throws {
        let loop = try EventLoop(index: 0)
        let opened = await onLoop(loop) { LoopBound(41, on: loop).value + 1 }
        #expect(opened == 42)
    }

    @Test func aValueBoundBeforeTheStartOpensOnTheLoop() async throws {
        let loop = try EventLoop(index: 0)
        let bound = LoopBound("ready", beforeStartOf: loop)
        let opened = await onLoop(loop) { bound.value }
        #expect(opened == "ready")
    }

    @Test func makingAValueOffItsLoopStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let loop = try EventLoop(index: 0)
            _ = LoopBound(1, on: loop)
        }
    }

    @Test func openingAValueOffItsLoopStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let loop = try EventLoop(index: 0)
            _ = LoopBound(1, beforeStartOf: loop).value
        }
    }
}
