import Testing

@testable import AppStoreDomain
@testable import GatewayFoundation

@Suite struct FairShareQueueTests {
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
    var far: MonotonicInstant { t0 + .seconds(3600) }

    /// Who gets the next `count` tokens while `callers` keep `backlog` calls each waiting.
    func served(_ callers: [(String, Int)], tokens count: Int, backlog: Int = 50) -> [String: Int] {
        var queue = FairShareQueue<Int>()
        var ticket = 0
        for _ in 0..<backlog {
            for (caller, weight) in callers {
                let queued = queue.enqueue(ticket, caller: caller, weight: weight, now: t0, deadline: far)
                #expect(queued)
                ticket += 1
            }
        }
        var counts: [String: Int] = [:]
        for _ in 0..<count {
            guard let waiter = queue.next() else { break }
            counts[waiter.caller, default: 0] += 1
        }
        return counts
    }

    @Test func equalWeightsShareEqually() {
        let counts = served([("flood", 1), ("quiet", 1)], tokens: 40)
        #expect(counts == ["flood": 20, "quiet": 20])
    }

    @Test func weightsSetTheShares() {
        let counts = served([("a", 3), ("b", 1)], tokens: 40)
        #expect(counts == ["a": 30, "b": 10])
    }

    @Test func aCallerThatStartsWaitingIsServedNextNotAfterTheBacklog() {
        var queue = FairShareQueue<Int>()
        for ticket in 0..<100 { _ = queue.enqueue(ticket, caller: "flood", weight: 1, now: t0, deadline: far) }
        for _ in 0..<30 { _ = queue.next() }
        _ = queue.enqueue(1000, caller: "quiet", weight: 1, now: t0, deadline: far)
        #expect(queue.next()?.caller == "quiet")
        #expect(queue.next()?.caller == "flood")
    }

    @Test func aCallerThatJoinsBelowItsShareGoesBeforeCallersWaitingAtTheSamePass() {
        var queue = FairShareQueue<Int>()
        for ticket in 0..<30 {
            for (index, caller) in ["a", "b", "c"].enumerated() {
                _ = queue.enqueue(ticket * 3 + index, caller: caller, weight: 1, now: t0, deadline: far)
            }
        }
        // A round, then mid-round: "a" was served at the current virtual time, "b" and "c" are still at it.
        #expect((0..<4).compactMap { _ in queue.next()?.caller } == ["a", "b", "c", "a"])
        _ = queue.enqueue(1000, caller: "quiet", weight: 1, now: t0, deadline: far)
        #expect(queue.next()?.caller == "quiet")
        #expect((0..<4).compactMap { _ in queue.next()?.caller } == ["b", "c", "a", "b"])
        // Several join at once: among themselves in the order they came.
        _ = queue.enqueue(1001, caller: "x", weight: 1, now: t0, deadline: far)
        _ = queue.enqueue(1002, caller: "y", weight: 1, now: t0, deadline: far)
        #expect((0..<3).compactMap { _ in queue.next()?.caller } == ["x", "y", "c"])
    }

    @Test func aCallerServedAboveItsShareDoesNotJumpTheQueueByLeavingAndComingBack() {
        var queue = FairShareQueue<Int>()
        for ticket in 0..<20 { _ = queue.enqueue(ticket, caller: "flood", weight: 1, now: t0, deadline: far) }
        _ = queue.enqueue(100, caller: "hop", weight: 1, now: t0, deadline: far)
        #expect(queue.next()?.caller == "flood")
        #expect(queue.next()?.caller == "hop")
        // "hop" had its token for this round; coming back at once it waits its turn behind "flood".
        _ = queue.enqueue(101, caller: "hop", weight: 1, now: t0, deadline: far)
        #expect((0..<3).compactMap { _ in queue.next()?.caller } == ["flood", "hop", "flood"])
    }

    @Test func anIdleCallerBanksNoCredit() {
        var queue = FairShareQueue<Int>()
        // "quiet" was served once long ago, then stayed idle while "flood" took 100 tokens.
        _ = queue.enqueue(0, caller: "quiet", weight: 1, now: t0, deadline: far)
        _ = queue.next()
        for ticket in 1...200 { _ = queue.enqueue(ticket, caller: "flood", weight: 1, now: t0, deadline: far) }
        for _ in 0..<100 { _ = queue.next() }
        for ticket in 300..<310 { _ = queue.enqueue(ticket, caller: "quiet", weight: 1, now: t0, deadline: far) }
        // From now on they alternate: the quiet caller does not get 100 tokens in a row.
        let next = (0..<10).compactMap { _ in queue.next()?.caller }
        #expect(next.filter { $0 == "quiet" }.count == 5)
    }

    @Test func aLoneCallerGetsEveryToken() {
        let counts = served([("only", 1)], tokens: 25)
        #expect(counts == ["only": 25])
    }

    @Test func waitersLeaveAtTheirDeadlineOrWhenRemoved() {
        var queue = FairShareQueue<Int>()
        _ = queue.enqueue(1, caller: "a", weight: 1, now: t0, deadline: t0 + .milliseconds(100))
        _ = queue.enqueue(2, caller: "a", weight: 1, now: t0, deadline: t0 + .seconds(2))
        _ = queue.enqueue(3, caller: "b", weight: 1, now: t0, deadline: t0 + .milliseconds(50))
        // A deadline at the instant a token comes is still served by it: only earlier deadlines leave.
        let first = queue.removeWaiters(deadlineBefore: t0 + .milliseconds(100)).map(\.ticket)
        let second = queue.removeWaiters(deadlineBefore: t0 + .milliseconds(101)).map(\.ticket)
        #expect(first == [3] && second == [1])
        let removed = queue.remove(2)
        let removedAgain = queue.remove(2)
        #expect(removed && !removedAgain)
        let next = queue.next()
        #expect(queue.isEmpty && next == nil)
    }

    @Test func eachCallerHasABoundedQueue() {
        var queue = FairShareQueue<Int>(maxWaitingPerCaller: 3)
        let accepted = (0..<3).map { queue.enqueue($0, caller: "a", weight: 1, now: t0, deadline: far) }
        let fourth = queue.enqueue(3, caller: "a", weight: 1, now: t0, deadline: far)
        let other = queue.enqueue(4, caller: "b", weight: 1, now: t0, deadline: far)
        #expect(accepted == [true, true, true] && !fourth && other)
        #expect(queue.count == 4 && queue.waiting("a") == 3)
    }

    @Test func arrivalOrderWithinACallerIsKept() {
        var queue = FairShareQueue<Int>()
        for ticket in 0..<5 { _ = queue.enqueue(ticket, caller: "a", weight: 1, now: t0, deadline: far) }
        #expect((0..<5).compactMap { _ in queue.next()?.ticket } == [0, 1, 2, 3, 4])
    }
}
