import GatewayFoundation
import Testing

@testable import EventLoops

@Suite struct TimerQueueTests {
    @Test func firesInDeadlineOrderAndOnlyWhenDue() {
        var queue = TimerQueue<String>()
        queue.schedule(at: .at(30), "c")
        queue.schedule(at: .at(10), "a")
        queue.schedule(at: .at(20), "b")
        queue.schedule(at: .at(10), "a2")
        #expect(queue.nextDeadline() == .at(10))
        #expect(queue.popDue(now: .at(9)).isEmpty)
        #expect(queue.popDue(now: .at(20)) == ["a", "a2", "b"])
        #expect(queue.count == 1)
        #expect(queue.popDue(now: .at(100)) == ["c"])
        #expect(queue.nextDeadline() == nil)
    }

    /// A timer cancelled by what an earlier timer of the same pass did never fires (the event loop pops
    /// one at a time); a timer scheduled during the pass, due or not, waits for the next pass.
    @Test func aTimerCancelledDuringThePassNeverFires() {
        var queue = TimerQueue<String>()
        queue.schedule(at: .at(10), "closes the connection")
        let housekeeping = queue.schedule(at: .at(10), "the connection's housekeeping")
        queue.schedule(at: .at(11), "later")
        let mark = queue.mark
        #expect(queue.popNextDue(now: .at(20), scheduledBefore: mark) == "closes the connection")
        queue.cancel(housekeeping)
        queue.schedule(at: .at(5), "scheduled during the pass")
        #expect(queue.popNextDue(now: .at(20), scheduledBefore: mark) == nil)  // the new one is first: next pass
        #expect(queue.popDue(now: .at(20)) == ["scheduled during the pass", "later"])
        #expect(queue.count == 0)
    }

    @Test func cancelledTimersNeverFire() {
        var queue = TimerQueue<Int>()
        let ids = (0..<100).map { queue.schedule(at: .at(Int64($0)), $0) }
        for (index, id) in ids.enumerated() where index % 3 == 0 { queue.cancel(id) }
        let fired = queue.popDue(now: .at(1_000))
        #expect(fired == (0..<100).filter { $0 % 3 != 0 })
        queue.cancel(ids[1])  // already fired: harmless
        #expect(queue.count == 0)
    }

    /// A call's deadline is scheduled far ahead and cancelled at once, 200,000 times: the heap must not
    /// keep a dead entry per call until its deadline comes (it did: 16 bytes per call for 120 s).
    @Test func cancelledTimersDoNotAccumulate() {
        var queue = TimerQueue<Int>()
        let keep = (0..<10).map { queue.schedule(at: .at(5_000 + Int64($0)), $0) }
        for index in 0..<200_000 {
            let id = queue.schedule(at: .at(120_000_000 + Int64(index)), index)
            queue.cancel(id)
            #expect(queue.storedEntries <= max(64, 2 * queue.count) + 1)
            if queue.storedEntries > 200 { break }
        }
        #expect(queue.count == 10)
        queue.cancel(keep[3])
        #expect(queue.popDue(now: .at(.max)) == [0, 1, 2, 4, 5, 6, 7, 8, 9])
    }

    @Test func aStaleIDCancelsNothingInItsReusedSlot() {
        var queue = TimerQueue<String>()
        let first = queue.schedule(at: .at(10), "first")
        queue.cancel(first)
        _ = queue.schedule(at: .at(20), "second")  // reuses the slot
        queue.cancel(first)
        #expect(queue.popDue(now: .at(100)) == ["second"])
    }

    @Test func randomScheduleAndCancelComeOutSorted() {
        var queue = TimerQueue<Int64>()
        var generator = SystemRandomNumberGenerator()
        var kept: [Int64] = []
        for _ in 0..<5_000 {
            let deadline = Int64.random(in: 0..<10_000, using: &generator)
            let id = queue.schedule(at: .at(deadline), deadline)
            if Bool.random(using: &generator) { queue.cancel(id) } else { kept.append(deadline) }
        }
        #expect(queue.popDue(now: .at(.max)) == kept.sorted())
    }

    @Test func randomScheduleComesOutSorted() {
        var queue = TimerQueue<Int64>()
        var generator = SystemRandomNumberGenerator()
        let deadlines = (0..<1_000).map { _ in Int64.random(in: 0..<10_000, using: &generator) }
        for deadline in deadlines { queue.schedule(at: .at(deadline), deadline) }
        #expect(queue.popDue(now: .at(.max)) == deadlines.sorted())
    }
}

extension MonotonicInstant {
    /// The instant `nanoseconds` after the clock's origin.
    fileprivate static func at(_ nanoseconds: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: nanoseconds) }
}

@Suite struct ListenAddressTests {
    @Test func parsesHostsAndPorts() {
        #expect(ListenAddress(parsing: "0.0.0.0:50051") == ListenAddress(host: "0.0.0.0", port: 50051))
        #expect(ListenAddress(parsing: "[::1]:8080") == ListenAddress(host: "::1", port: 8080))
        #expect(ListenAddress(parsing: "localhost:0") == ListenAddress(host: "localhost", port: 0))
        #expect(ListenAddress(parsing: "[::1]:8080")?.description == "[::1]:8080")
    }

    @Test(arguments: ["", "50051", ":50051", "host:", "host:99999", "host:-1", "host:http"])
    func rejectsMalformed(text: String) {
        #expect(ListenAddress(parsing: text) == nil)
    }
}

extension TimerQueue {
    /// Every live timer due at or before `now`, earliest first: one pass of the event loop.
    fileprivate mutating func popDue(now: MonotonicInstant) -> [Payload] {
        var due: [Payload] = []
        let mark = self.mark
        while let payload = popNextDue(now: now, scheduledBefore: mark) { due.append(payload) }
        return due
    }
}
