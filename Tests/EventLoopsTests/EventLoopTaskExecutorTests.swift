import GatewayFoundation
import Testing

@testable import EventLoops

#if canImport(Glibc)
    import Glibc
#endif

/// The loop as a Swift `TaskExecutor`: a task preferring it runs there, comes back there from other threads,
/// leaves only through `offLoop`, and still ends once the loop has stopped.
@Suite struct EventLoopTaskExecutorTests {
    /// A loop running on a thread of its own for the test's length.
    private final class RunningLoop: Sendable {
        let loop: EventLoop
        private let thread: LoopThread

        init() throws {
            loop = try EventLoop(index: 0)
            let loop = loop
            thread = spawnThread(name: "test-loop") { loop.run() }
        }

        func stop() {
            loop.stop()
            thread.join()
        }
    }

    @Test func aTaskPreferringTheLoopRunsOnItsThread() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let loop = running.loop
        let onLoop = await Task(executorPreference: loop) { loop.inEventLoop }.value
        #expect(onLoop)
    }

    @Test func aContinuationResumedFromAnotherThreadComesBackToTheLoop() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let loop = running.loop
        let places = await Task(executorPreference: loop) { () -> [Bool] in
            var places = [loop.inEventLoop]
            // Resumed from a thread of its own, as another loop resumes a caller whose call it ran.
            let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                spawnThread(name: "test-resumer") { continuation.resume(returning: 7) }.join()
            }
            places.append(loop.inEventLoop && value == 7)
            return places
        }.value
        #expect(places == [true, true])
    }

    @Test func offLoopWorkRunsElsewhereAndTheTaskComesBackOnce() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let loop = running.loop
        let places = await Task(executorPreference: loop) { () -> [Bool] in
            let before = loop.inEventLoop
            let (during, childDuring) = await offLoop {
                (loop.inEventLoop, await Task { loop.inEventLoop }.value)
            }
            return [before, during, childDuring, loop.inEventLoop]
        }.value
        #expect(places == [true, false, false, true])
    }

    @Test func childTasksInheritTheLoop() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let loop = running.loop
        let children = await Task(executorPreference: loop) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<4 { group.addTask { loop.inEventLoop } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }.value
        #expect(children == [true, true, true, true])
    }

    @Test func aTaskResumedAfterTheLoopStoppedStillEnds() async throws {
        let running = try RunningLoop()
        let loop = running.loop
        let (gate, opened) = AsyncStream.makeStream(of: Void.self)
        let task = Task(executorPreference: loop) { () -> Bool in
            for await _ in gate { break }
            return loop.inEventLoop
        }
        // Let the task start on the loop and wait, stop the loop, then wake the task.
        try await Task.sleep(for: .milliseconds(50))
        running.stop()
        opened.yield()
        opened.finish()
        let endedOnLoop = await task.value
        #expect(!endedOnLoop)
    }

    @Test func workHandedOverFromTheLoopItselfRuns() async throws {
        let running = try RunningLoop()
        defer { running.stop() }
        let loop = running.loop
        // Handed over from the loop itself (no eventfd write announces them), a hundred closures all run.
        let count = await Task(executorPreference: loop) { () -> Int in
            await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                final class Counter: @unchecked Sendable { var value = 0 }
                let counter = Counter()
                for _ in 0..<100 {
                    loop.execute {
                        counter.value += 1
                        if counter.value == 100 { continuation.resume(returning: counter.value) }
                    }
                }
            }
        }.value
        #expect(count == 100)
    }
}
