import Foundation
import Testing

@testable import GatewayFoundation

@Suite struct FastRandomTests {
    /// Runs `body` on a new thread and returns what it returns.
    private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.start(named: "random-test") { continuation.resume(returning: body()) }
        }
    }

    /// A thread's draws depend on its own state only: another thread drawing thousands of values in between
    /// does not move it (no state shared between threads, so event loops share no cache line for their ids).
    @Test func aThreadsStreamIsItsOwn() async {
        let first = Lock<(state: UInt64, expected: UInt64)?>(nil)
        let drawn = DispatchSemaphore(value: 0)
        let otherDone = DispatchSemaphore(value: 0)
        let result = Lock<UInt64?>(nil)
        Thread.start(named: "random-a") {
            var random = FastRandom()
            _ = random.next()
            let state = FastRandom.stateOfThisThread
            first.withLock { $0 = (state, FastRandom.value(after: state)) }
            drawn.signal()
            otherDone.wait()
            result.withLock { $0 = random.next() }
            drawn.signal()
        }
        drawn.wait()
        let otherState = await onNewThread { () -> UInt64 in
            var random = FastRandom()
            for _ in 0..<10_000 { _ = random.next() }
            return FastRandom.stateOfThisThread
        }
        otherDone.signal()
        drawn.wait()
        let (state, expected) = first.withLock { $0! }
        #expect(state != 0 && otherState != 0 && otherState != state)
        #expect(result.withLock { $0 } == expected)
    }

    /// Ids drawn on many threads at once are all different (each thread starts from its own secure seed).
    @Test func drawsOnManyThreadsAreDistinct() async {
        let values = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await onNewThread {
                        var random = FastRandom()
                        return (0..<5_000).map { _ in random.next() }
                    }
                }
            }
            return await group.reduce(into: [UInt64]()) { $0 += $1 }
        }
        #expect(values.count == 40_000)
        #expect(Set(values).count == values.count)
    }
}
