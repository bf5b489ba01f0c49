import Dispatch
import Foundation
import Testing

@testable import GatewayFoundation

@Suite struct ThreadIndexTests {
    private final class Box: Sendable {}

    /// A thread keeps its number and its value; threads running side by side get numbers of their own and, while
    /// there are no more of them than values, values of their own.
    @Test func threadsSideBySideHaveValuesOfTheirOwn() {
        // Room for every thread this test process makes, so no two of the four share a value.
        let perThread = PerThread(count: 1024) { Box() }
        let mine = perThread.current
        #expect(perThread.current === mine && ThreadIndex.current == ThreadIndex.current)
        let seen = Lock<[(index: Int, value: ObjectIdentifier)]>([])
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            Thread.detachNewThread {
                let value = perThread.current
                seen.withLock { $0.append((ThreadIndex.current, ObjectIdentifier(value))) }
                started.signal()
                release.wait()  // all four alive at once
                #expect(perThread.current === value)
                done.leave()
            }
        }
        for _ in 0..<4 { started.wait() }
        for _ in 0..<4 { release.signal() }
        done.wait()
        let all = seen.withLock { $0 }
        #expect(Set(all.map(\.index)).count == 4)
        #expect(Set(all.map(\.value)).count == 4)
    }
}
