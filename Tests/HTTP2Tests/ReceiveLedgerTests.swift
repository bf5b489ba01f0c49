import Testing

@testable import HTTP2

@Suite struct ReceiveLedgerTests {
    typealias Grant = ReceiveLedger.Grant

    @Test func grantsAtOnceWhileWithinTheBudget() {
        var ledger = ReceiveLedger(limit: 100)
        #expect(ledger.received(60, stream: 1, processHasRoom: true) == [Grant(stream: 1, count: 60)])
        #expect(ledger.received(40, stream: 3, processHasRoom: true) == [Grant(stream: 3, count: 40)])
        #expect(ledger.held == 100)
        #expect(ledger.owedBytes == 0)
    }

    @Test func overTheBudgetTheWindowIsOwedUntilBytesAreReleased() {
        var ledger = ReceiveLedger(limit: 100)
        _ = ledger.received(90, stream: 1, processHasRoom: true)
        #expect(ledger.received(20, stream: 3, processHasRoom: true).isEmpty)
        #expect(ledger.received(5, stream: 1, processHasRoom: true).isEmpty)
        #expect(ledger.owedBytes == 25)
        // Releasing a little, still over: nothing granted.
        let partial = ledger.release(10, stream: 1, processHasRoom: true)
        #expect(partial.released == 10 && partial.grants.isEmpty)
        // Back within the budget: everything owed goes back.
        let rest = ledger.release(85, stream: 1, processHasRoom: true)
        #expect(rest.released == 85)
        #expect(rest.grants == [Grant(stream: 1, count: 5), Grant(stream: 3, count: 20)])
        #expect(ledger.held == 20 && ledger.owedBytes == 0)
    }

    @Test func theProcessCapHoldsTheWindowToo() {
        var ledger = ReceiveLedger(limit: 100)
        #expect(ledger.received(10, stream: 1, processHasRoom: false).isEmpty)
        #expect(ledger.grantsIfRoom(processHasRoom: false).isEmpty)
        #expect(ledger.grantsIfRoom(processHasRoom: true) == [Grant(stream: 1, count: 10)])
    }

    @Test func aClosedStreamReleasesEverythingAndReturnsItsWindow() {
        var ledger = ReceiveLedger(limit: 10)
        _ = ledger.received(8, stream: 1, processHasRoom: true)
        _ = ledger.received(8, stream: 3, processHasRoom: true)  // over: owed
        // Even with the process over its cap, a closed stream's owed window goes back: its bytes are gone.
        let closed = ledger.streamClosed(3, processHasRoom: false)
        #expect(closed.released == 8)
        #expect(closed.grants == [Grant(stream: 3, count: 8)])
        #expect(ledger.held == 8 && ledger.held(by: 3) == 0)
    }

    @Test func releasingMoreThanHeldReleasesOnlyWhatIsHeld() {
        var ledger = ReceiveLedger(limit: 10)
        _ = ledger.received(4, stream: 1, processHasRoom: true)
        #expect(ledger.release(100, stream: 1, processHasRoom: true).released == 4)
        #expect(ledger.release(-5, stream: 1, processHasRoom: true).released == 0)
        #expect(ledger.release(3, stream: 9, processHasRoom: true).released == 0)
        #expect(ledger.held == 0)
    }

    @Test func sharedBudgetCountsAcrossConnections() {
        let budget = SharedReceiveBudget(limit: 10)
        budget.add(6)
        budget.add(4)
        #expect(budget.hasRoom)
        budget.add(1)
        #expect(!budget.hasRoom)
        budget.subtract(5)
        #expect(budget.held == 6 && budget.hasRoom)
    }
}
