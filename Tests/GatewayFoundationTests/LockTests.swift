import Foundation
import GatewayFoundation
import Testing

@Suite struct LockTests {
    private final class Shared: Sendable {
        let values = Lock<[Int]>([])
    }

    /// Four threads append to one array under the lock, contended enough that `Synchronization.Mutex` would
    /// wait in the kernel. Every append is kept; and under `make test-tsan` this is the program that
    /// ThreadSanitizer reported as a race with `Mutex` (it cannot see a futex hand-over): with `Lock` it reports
    /// nothing, because the lock tells it about each acquire and release.
    @Test func appendsFromFourThreadsAreAllKept() {
        let shared = Shared()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for value in 0..<5_000 {
                shared.values.withLock { $0.append(thread * 5_000 + value) }
            }
        }
        let values = shared.values.withLock { $0 }
        #expect(values.count == 20_000)
        #expect(Set(values) == Set(0..<20_000))
    }

    private struct Refused: Error, Equatable {}

    /// What the body returns comes back; what it throws is rethrown (typed), with the changes it made before
    /// throwing kept, as with `Mutex`.
    @Test func theBodysResultAndErrorComeBack() {
        let counter = Lock(0)
        #expect(
            counter.withLock { value -> Int in
                value += 2
                return value * 10
            } == 20)
        #expect(throws: Refused.self) {
            try counter.withLock { (value: inout Int) throws(Refused) in
                value += 1
                throw Refused()
            }
        }
        #expect(counter.withLock { $0 } == 3)
    }
}
