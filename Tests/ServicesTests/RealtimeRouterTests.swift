import GatewayFoundation
import Testing

@testable import Services

/// `RealtimeRouter`: which stream answers a realtime request, what waits, what is late; time passed in.
@Suite struct RealtimeRouterTests {
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
    func at(_ milliseconds: Int64) -> MonotonicInstant { t0.advanced(byNanoseconds: milliseconds * 1_000_000) }

    @Test func withoutAStreamNothingIsSent() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        #expect(router.route(app: "a", requestIdentifier: "r1", deadline: at(400)) == .noStream)
        _ = router.open(apps: ["b"])
        #expect(router.route(app: "a", requestIdentifier: "r1", deadline: at(400)) == .noStream)
        #expect(router.waitingCount == 0)
    }

    @Test func requestsGoRoundRobinOverTheAppsStreams() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        let first = router.open(apps: ["a"])!
        let second = router.open(apps: ["a", "b"])!
        var streams: [RealtimeRouter.StreamID] = []
        for index in 0..<4 {
            guard case .sent(let stream, _) = router.route(app: "a", requestIdentifier: "r\(index)", deadline: at(400))
            else {
                Issue.record("request \(index) not sent")
                return
            }
            streams.append(stream)
        }
        #expect(streams == [first, second, first, second])
        guard case .sent(let onlyB, _) = router.route(app: "b", requestIdentifier: "rb", deadline: at(400)) else {
            Issue.record("b not sent")
            return
        }
        #expect(onlyB == second)
    }

    @Test func aFullStreamIsSkippedAndAllFullIsFull() {
        var router = RealtimeRouter(maxPendingPerStream: 1, maxStreams: 4)
        let first = router.open(apps: ["a"])!
        let second = router.open(apps: ["a"])!
        #expect(router.route(app: "a", requestIdentifier: "r1", deadline: at(400)) == .sent(stream: first, ticket: 1))
        #expect(router.route(app: "a", requestIdentifier: "r2", deadline: at(400)) == .sent(stream: second, ticket: 2))
        #expect(router.route(app: "a", requestIdentifier: "r3", deadline: at(400)) == .full)
        // An answer frees its stream's room.
        #expect(router.answer(stream: first, requestIdentifier: "r1", now: at(10)) == .onTime(1))
        #expect(router.route(app: "a", requestIdentifier: "r3", deadline: at(400)) == .sent(stream: first, ticket: 3))
    }

    @Test func anAnswerCountsOnlyOnItsStreamAndOnlyOnce() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        let first = router.open(apps: ["a"])!
        let other = router.open(apps: ["b"])!
        guard case .sent(_, let ticket) = router.route(app: "a", requestIdentifier: "r1", deadline: at(400)) else {
            Issue.record("not sent")
            return
        }
        #expect(router.answer(stream: other, requestIdentifier: "r1", now: at(5)) == .unknown)
        #expect(router.answer(stream: first, requestIdentifier: "nope", now: at(5)) == .unknown)
        #expect(router.answer(stream: first, requestIdentifier: "r1", now: at(5)) == .onTime(ticket))
        #expect(router.answer(stream: first, requestIdentifier: "r1", now: at(6)) == .unknown)
        #expect(router.waitingCount == 0)
    }

    @Test func anAnswerAfterTheDeadlineIsLate() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        let stream = router.open(apps: ["a"])!
        _ = router.route(app: "a", requestIdentifier: "r1", deadline: at(400))
        #expect(router.answer(stream: stream, requestIdentifier: "r1", now: at(400)) == .late(1))
    }

    @Test func expiryStopsTheWaitAndALaterAnswerIsUnknown() {
        var router = RealtimeRouter(maxPendingPerStream: 1, maxStreams: 4)
        let stream = router.open(apps: ["a"])!
        _ = router.route(app: "a", requestIdentifier: "r1", deadline: at(400))
        _ = router.route(app: "b", requestIdentifier: "r2", deadline: at(400))
        #expect(router.expireAll(now: at(399)) == [])
        #expect(router.expireAll(now: at(400)) == [1])
        #expect(router.expire(1) == false)
        #expect(router.answer(stream: stream, requestIdentifier: "r1", now: at(401)) == .unknown)
        // The room is free again.
        #expect(router.route(app: "a", requestIdentifier: "r3", deadline: at(800)) == .sent(stream: stream, ticket: 2))
    }

    @Test func aRepeatedRequestIdentifierIsNotSentTwice() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        _ = router.open(apps: ["a"])
        _ = router.route(app: "a", requestIdentifier: "r1", deadline: at(400))
        #expect(router.route(app: "a", requestIdentifier: "r1", deadline: at(400)) == .duplicate)
    }

    @Test func closingAStreamReturnsWhatWaitedOnItAndRoutesAround() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 4)
        let first = router.open(apps: ["a"])!
        let second = router.open(apps: ["a"])!
        _ = router.route(app: "a", requestIdentifier: "r1", deadline: at(400))  // first
        _ = router.route(app: "a", requestIdentifier: "r2", deadline: at(400))  // second
        _ = router.route(app: "a", requestIdentifier: "r3", deadline: at(400))  // first
        #expect(router.close(first) == [1, 3])
        #expect(router.close(first) == [])
        #expect(router.waitingCount == 1)
        #expect(router.route(app: "a", requestIdentifier: "r4", deadline: at(400)) == .sent(stream: second, ticket: 4))
        _ = router.close(second)
        #expect(router.route(app: "a", requestIdentifier: "r5", deadline: at(400)) == .noStream)
        #expect(router.streamCount == 0)
    }

    @Test func streamsAreBounded() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 2)
        let first = router.open(apps: ["a"])
        #expect(first != nil && router.open(apps: ["a"]) != nil)
        #expect(router.open(apps: ["a"]) == nil)
        _ = router.close(first!)
        #expect(router.open(apps: ["a"]) != nil)
    }
}

extension RealtimeRouter {
    /// An anonymous stream (open mode), nil when the replica is full.
    mutating func open(apps: Set<String>) -> StreamID? {
        try? open(apps: apps, caller: nil, callerLimit: nil).get()
    }
}

@Suite struct RealtimeCallerLimitTests {
    @Test func aCallerHoldsAtMostItsOwnNumberOfStreamsAndClosingOneFreesIt() throws {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 10)
        let first = try router.open(apps: ["a"], caller: "billing", callerLimit: 2).get()
        _ = try router.open(apps: ["a"], caller: "billing", callerLimit: 2).get()
        #expect(router.open(apps: ["a"], caller: "billing", callerLimit: 2) == .failure(.callerFull(limit: 2)))
        // Another caller, and anonymous streams, are not held up by billing's limit.
        #expect((try? router.open(apps: ["a"], caller: "reports", callerLimit: 2).get()) != nil)
        #expect(router.open(apps: ["a"]) != nil)
        #expect(router.streamCount(of: "billing") == 2)
        _ = router.close(first)
        #expect(router.streamCount(of: "billing") == 1)
        #expect((try? router.open(apps: ["a"], caller: "billing", callerLimit: 2).get()) != nil)
    }

    @Test func theReplicaLimitStillComesFirst() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 1)
        #expect((try? router.open(apps: ["a"], caller: "x", callerLimit: 4).get()) != nil)
        #expect(router.open(apps: ["a"], caller: "y", callerLimit: 4) == .failure(.replicaFull))
    }

    @Test func aLimitOfZeroRefusesEveryStream() {
        var router = RealtimeRouter(maxPendingPerStream: 4, maxStreams: 10)
        #expect(router.open(apps: ["a"], caller: "x", callerLimit: 0) == .failure(.callerFull(limit: 0)))
    }
}
