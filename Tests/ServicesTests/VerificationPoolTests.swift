import Foundation
import Synchronization
import Testing

@testable import Services

/// The bounded pool behind uncached VerifyJWS calls: a full pool refuses instead of queueing.
@Suite struct VerificationPoolTests {
    @Test func aFullPoolRefusesAtOnce() async {
        let pool = VerificationPool(threads: 1, queueLimit: 1)
        #expect(pool.capacity == 2)
        let gate = Gate()
        // Two jobs hold the worker and the queue slot until the gate opens.
        let blocked = (0..<2).map { _ in
            Task {
                await pool.run {
                    while !gate.isOpen { usleep(1000) }; return 1
                }
            }
        }
        while pool.load < 2 { await Task.yield() }
        #expect(await pool.run { 3 } == nil)
        gate.open()
        for task in blocked { #expect(await task.value == 1) }
        #expect(pool.load == 0)
        #expect(await pool.run { 4 } == 4)
    }
}

private final class Gate: Sendable {
    private let state = Atomic<Bool>(false)
    var isOpen: Bool { state.load(ordering: .acquiring) }
    func open() { state.store(true, ordering: .releasing) }
}
