import Testing

@testable import HTTPServer

@Suite struct ReceiveLedgerTests {
    typealias Grant = ReceiveLedger.Grant

    /// A ledger and what each stream holds, kept beside it as the connection keeps it on each stream.
    struct Books {
        var ledger: ReceiveLedger
        var streams: [Int32: Int] = [:]

        init(limit: Int) { ledger = ReceiveLedger(limit: limit) }

        mutating func received(_ count: Int, _ stream: Int32, room: Bool = true) -> ReceiveLedger.Grants {
            ledger.received(count, stream: stream, streamHeld: &streams[stream, default: 0], processHasRoom: room)
        }

        mutating func release(_ count: Int, _ stream: Int32, room: Bool = true) -> (
            released: Int, grants: ReceiveLedger.Grants
        ) {
            ledger.release(count, stream: stream, streamHeld: &streams[stream, default: 0], processHasRoom: room)
        }

        mutating func closed(_ stream: Int32, room: Bool = true) -> (released: Int, grants: ReceiveLedger.Grants) {
            ledger.streamClosed(stream, streamHeld: streams.removeValue(forKey: stream) ?? 0, processHasRoom: room)
        }
    }

    @Test func grantsAtOnceWhileWithinTheBudget() {
        var books = Books(limit: 100)
        #expect(books.received(60, 1) == [Grant(stream: 1, count: 60)])
        #expect(books.received(40, 3) == [Grant(stream: 3, count: 40)])
        #expect(books.ledger.held == 100)
        #expect(books.ledger.owedBytes == 0)
        #expect(books.streams == [1: 60, 3: 40])
    }

    @Test func overTheBudgetTheWindowIsOwedUntilBytesAreReleased() {
        var books = Books(limit: 100)
        _ = books.received(90, 1)
        #expect(books.received(20, 3).isEmpty)
        #expect(books.received(5, 1).isEmpty)
        #expect(books.ledger.owedBytes == 25)
        // Releasing a little, still over: nothing granted.
        let partial = books.release(10, 1)
        #expect(partial.released == 10 && partial.grants.isEmpty)
        // Back within the budget: everything owed goes back.
        let rest = books.release(85, 1)
        #expect(rest.released == 85)
        #expect(rest.grants == [Grant(stream: 1, count: 5), Grant(stream: 3, count: 20)])
        #expect(books.ledger.held == 20 && books.ledger.owedBytes == 0)
        #expect(books.streams == [1: 0, 3: 20])
    }

    @Test func theProcessCapHoldsTheWindowToo() {
        var books = Books(limit: 100)
        #expect(books.received(10, 1, room: false).isEmpty)
        #expect(books.ledger.grantsIfRoom(processHasRoom: false).isEmpty)
        #expect(books.ledger.grantsIfRoom(processHasRoom: true) == [Grant(stream: 1, count: 10)])
    }

    @Test func aClosedStreamReleasesEverythingAndReturnsItsWindow() {
        var books = Books(limit: 10)
        _ = books.received(8, 1)
        _ = books.received(8, 3)  // over: owed
        // Even with the process over its cap, a closed stream's owed window goes back: its bytes are gone.
        let closed = books.closed(3, room: false)
        #expect(closed.released == 8)
        #expect(closed.grants == [Grant(stream: 3, count: 8)])
        #expect(books.ledger.held == 8)
        // A stream closed holding nothing, or never seen, changes nothing.
        #expect(books.closed(5).released == 0 && books.ledger.held == 8)
    }

    @Test func releasingMoreThanHeldReleasesOnlyWhatIsHeld() {
        var books = Books(limit: 10)
        _ = books.received(4, 1)
        #expect(books.release(100, 1).released == 4)
        #expect(books.release(-5, 1).released == 0)
        #expect(books.release(3, 9).released == 0)
        #expect(books.ledger.held == 0)
        #expect(books.streams[1] == 0)
    }

    @Test func sharedBudgetCountsAcrossConnections() {
        let budget = LoopReceiveBudget(SharedReceiveBudget(limit: 10))
        budget.add(6)
        budget.add(4)
        #expect(budget.hasRoom)
        budget.add(1)
        #expect(!budget.hasRoom)
        budget.subtract(5)
        #expect(budget.held == 6 && budget.hasRoom)
    }

    /// Two loops' views of one budget: each loop's own bytes count exactly in its `hasRoom`, the shared total
    /// learns of them in steps of `slack` (small calls touch nothing shared) and exactly once a loop holds none.
    @Test func loopViewsPublishInStepsAndSettleAtZero() {
        let shared = SharedReceiveBudget(limit: 3 * LoopReceiveBudget.slack)
        let first = LoopReceiveBudget(shared)
        let second = LoopReceiveBudget(shared)
        first.add(5)
        #expect(shared.held == 0)  // a small call's bytes stay on its loop
        #expect(first.held == 5)
        first.subtract(5)
        #expect(shared.held == 0)
        first.add(LoopReceiveBudget.slack + 1)
        #expect(shared.held == LoopReceiveBudget.slack + 1)  // a step's worth is published at once
        second.add(2 * LoopReceiveBudget.slack)
        #expect(shared.held == 3 * LoopReceiveBudget.slack + 1)
        #expect(!first.hasRoom && !second.hasRoom)
        second.subtract(10)
        // Ten bytes released on the second loop: not yet published, but counted by that loop.
        #expect(shared.held == 3 * LoopReceiveBudget.slack + 1)
        #expect(second.hasRoom && !first.hasRoom)
        second.subtract(2 * LoopReceiveBudget.slack - 10)
        first.subtract(LoopReceiveBudget.slack + 1)
        #expect(shared.held == 0)  // exact once every loop holds none
        #expect(first.hasRoom && second.hasRoom)
    }
}
