import Testing

@testable import GRPC

@Suite struct ServerLifeTests {
    @Test func aServerStartsOnceAndTheFirstShutdownRequestCounts() {
        var life = ServerLife()
        let started = life.start(), startedAgain = life.start()
        #expect(started && !startedAgain)
        let asked = life.requestShutdown(grace: .seconds(5)), askedAgain = life.requestShutdown(grace: .zero)
        #expect(asked && !askedAgain)
        #expect(life.state == .shutdownRequested(grace: .seconds(5)))
    }

    /// One thread drains; every other one waits for its outcome.
    @Test func onlyOneThreadDrains() {
        var life = ServerLife()
        _ = life.start()
        let beforeRequest = life.beginDraining()
        #expect(beforeRequest == nil)
        _ = life.requestShutdown(grace: nil)
        let first = life.beginDraining(), second = life.beginDraining()
        #expect(first == .some(nil))
        #expect(second == nil)
        #expect(life.outcome == nil)
        life.finish(.callsEnded)
        #expect(life.outcome == .callsEnded)
        let askedAfter = life.requestShutdown(grace: nil), startedAfter = life.start()
        #expect(!askedAfter && !startedAfter)
    }

    /// A server stopped before it started never starts.
    @Test func aShutdownBeforeTheStartEndsTheServer() {
        var life = ServerLife()
        let asked = life.requestShutdown(grace: .zero), started = life.start()
        #expect(asked && !started)
    }
}
