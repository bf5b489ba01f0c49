import Testing

@testable import HTTPServer

@Suite struct ServerConnectionPhaseTests {
    typealias Phase = ServerConnectionPhase

    @Test func aCloseBetweenReadsHappensAtOnce() {
        var phase = Phase.serving
        #expect(phase.requestClose() == .closeNow)
        #expect(phase == .serving)  // the connection performs it with close()
        let closed = phase.close()
        #expect(closed && phase.isClosed)
    }

    @Test func aCloseDecidedWhileReceivingWaitsForTheReceiveToReturn() {
        var phase = Phase.serving
        phase.beginReceiving()
        #expect(phase == .receiving(closeRequested: false))
        #expect(phase.requestClose() == .afterReceiving)
        #expect(phase.requestClose() == .afterReceiving)
        #expect(!phase.isClosed)
        let closeRequested = phase.endReceiving()
        #expect(closeRequested && phase == .serving)
    }

    @Test func aReceiveWithoutACloseLeavesTheConnectionServing() {
        var phase = Phase.serving
        phase.beginReceiving()
        let closeRequested = phase.endReceiving()
        #expect(!closeRequested && phase == .serving)
    }

    @Test func aClosedConnectionIgnoresEverything() {
        var phase = Phase.serving
        phase.beginReceiving()
        let first = phase.close()  // closed from inside a callback
        let second = phase.close()
        #expect(first && !second)
        #expect(phase.requestClose() == .ignored)
        let closeRequested = phase.endReceiving()
        #expect(!closeRequested)
        phase.beginReceiving()
        #expect(phase == .closed)
    }
}
