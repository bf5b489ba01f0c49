import GatewayFoundation
import Testing

@testable import GRPC

/// A call's life driven by hand: no stream, no task, no clock.
@Suite struct CallStateTests {
    let method = "/appstore.gateway.v1.AppStoreGateway/GetHistory"

    @Test func aUnaryCallKeepsOneMessageStartsAtTheEndAndEndsOnce() {
        var call = CallState(method: method, requests: .single, callDeadline: .at(1_000))
        #expect(call.phase == .awaitingRequest)
        let r1 = call.messageArrived()
        #expect(r1 == .keep)
        let r2 = call.requestEnded(partialMessage: false)
        #expect(r2 == .start)
        #expect(call.phase == .running)
        #expect(call.activeDeadline == .at(1_000))  // grpc-timeout bounds the whole call
        call.responseStarted()
        #expect(call.phase == .streaming)
        let r3 = call.finish(.ok)
        #expect(r3 == .trailers)
        let r4 = call.finish(.internal)
        #expect(r4 == nil)  // ended once
        #expect(call.phase == .finished(.ok) && call.activeDeadline == nil)
    }

    @Test func aSecondMessageOrNoneOrAHalfOneEndsTheCall() {
        var two = CallState(method: method, requests: .single, callDeadline: nil)
        _ = two.messageArrived()
        guard case .fail(let status) = two.messageArrived() else { Issue.record("a second message was kept"); return }
        #expect(status.code == .unimplemented)

        var none = CallState(method: method, requests: .single, callDeadline: nil)
        guard case .fail(let empty) = none.requestEnded(partialMessage: false) else {
            Issue.record("started empty"); return
        }
        #expect(empty.code == .unimplemented)

        var half = CallState(method: method, requests: .single, callDeadline: nil)
        guard case .fail(let truncated) = half.requestEnded(partialMessage: true) else {
            Issue.record("truncated"); return
        }
        #expect(truncated.code == .internal)
    }

    @Test func anErrorBeforeAnyMessageGoesTrailersOnly() {
        var call = CallState(method: method, requests: .single, callDeadline: nil)
        _ = call.messageArrived()
        _ = call.requestEnded(partialMessage: false)
        let r5 = call.finish(.notFound)
        #expect(r5 == .trailersOnly)
        let r6 = call.messageArrived()
        #expect(r6 == .drop)
        let r7 = call.requestEnded(partialMessage: false)
        #expect(r7 == .none)
        let r8 = call.cancelled()
        #expect(!r8)  // a reset after the end changes nothing
    }

    @Test func aStreamWithoutTimeoutIsBoundedOnlyUntilItsRequestIsIn() {
        var call = CallState(method: method, requests: .single, callDeadline: nil, requestDeadline: .at(500))
        #expect(call.activeDeadline == .at(500))
        _ = call.messageArrived()
        let r9 = call.deadlinePassed(now: .at(499))
        #expect(r9 == false)
        let r10 = call.requestEnded(partialMessage: false)
        #expect(r10 == .start)
        #expect(call.activeDeadline == nil)  // a follower may stream for hours
        let r11 = call.deadlinePassed(now: .at(10_000))
        #expect(r11 == false)
    }

    @Test func aBidirectionalCallRunsAtOnceAndDeliversEveryMessage() {
        var call = CallState(method: method, requests: .stream, callDeadline: nil, requestDeadline: .at(500))
        #expect(call.phase == .running)
        let r12 = call.deadlinePassed(now: .at(500))
        #expect(r12)  // nothing arrived in time
        let r13 = call.messageArrived()
        #expect(r13 == .deliver)
        #expect(call.activeDeadline == nil)  // begun once its first message is in
        let r14 = call.messageArrived()
        #expect(r14 == .deliver)
        let r15 = call.requestEnded(partialMessage: false)
        #expect(r15 == .closeRequests)
    }

    @Test func theDeadlineEndsTheCallOnlyWhenReachedAndOnlyOnce() {
        var call = CallState(method: method, requests: .single, callDeadline: .at(1_000))
        let r16 = call.deadlinePassed(now: .at(999))
        #expect(!r16)
        let r17 = call.deadlinePassed(now: .at(1_000))
        #expect(r17)
        let r18 = call.finish(.deadlineExceeded)
        #expect(r18 == .trailersOnly)
        let r19 = call.deadlinePassed(now: .at(2_000))
        #expect(!r19)
    }

    @Test func aResetEndsARunningCallAsCancelled() {
        var call = CallState(method: method, requests: .single, callDeadline: nil)
        _ = call.messageArrived()
        _ = call.requestEnded(partialMessage: false)
        let r20 = call.cancelled()
        #expect(r20)
        #expect(call.phase == .finished(.cancelled))
    }
}

extension MonotonicInstant {
    /// The instant `nanoseconds` after the clock's origin.
    fileprivate static func at(_ nanoseconds: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: nanoseconds) }
}
