import GatewayFoundation
import Testing

@testable import GRPC

@Suite struct DeadlinePolicyTests {
    let policy = DeadlinePolicy(defaultTimeout: .seconds(120), maximumTimeout: .seconds(1_800))
    let now = MonotonicInstant(nanoseconds: 100)

    @Test func aCallWithoutTimeoutGetsTheDefault() {
        #expect(policy.timeout(requested: nil) == .seconds(120))
    }

    @Test func aLongerTimeoutIsCappedAndAShorterOneKept() throws {
        #expect(policy.timeout(requested: .seconds(3_600)) == .seconds(1_800))
        #expect(policy.timeout(requested: .milliseconds(5)) == .milliseconds(5))
        #expect(policy.timeout(requested: try GRPCTimeout.parse("99999999H")) == .seconds(1_800))
    }

    @Test func aDefaultAboveTheMaximumIsCappedToo() {
        let odd = DeadlinePolicy(defaultTimeout: .seconds(10), maximumTimeout: .seconds(1))
        #expect(odd.timeout(requested: nil) == .seconds(1))
    }

    @Test func theDeadlineSaturates() throws {
        // The configuration's largest values (UInt64 milliseconds, clamped as GRPCServer does) and the largest
        // grpc-timeout: the deadline is the end of the clock, never reached, and nothing traps.
        let huge = DeadlinePolicy(
            defaultTimeout: .milliseconds(Int64(clamping: UInt64.max)),
            maximumTimeout: .milliseconds(Int64(clamping: UInt64.max)))
        let end = MonotonicInstant(nanoseconds: .max)
        #expect(huge.deadline(requested: nil, now: MonotonicInstant(nanoseconds: 10)) == end)
        #expect(huge.deadline(requested: try GRPCTimeout.parse("99999999H"), now: now) == end)
        #expect(policy.deadline(requested: .nanoseconds(7), now: now) == MonotonicInstant(nanoseconds: 107))
    }

    @Test func aStreamWithoutTimeoutIsBoundedOnlyUntilItsRequestArrives() {
        let streaming = policy.deadlines(requested: nil, streaming: true, now: now)
        #expect(streaming.call == nil)
        #expect(streaming.request == now + .seconds(120))
    }

    @Test func aStreamWithATimeoutAndEveryUnaryCallHaveACallDeadline() throws {
        let timed = policy.deadlines(requested: .milliseconds(5), streaming: true, now: now)
        #expect(timed.call == MonotonicInstant(nanoseconds: 5_000_100) && timed.request == nil)
        let unary = policy.deadlines(requested: nil, streaming: false, now: now)
        #expect(unary.call == MonotonicInstant(nanoseconds: 100 + 120_000_000_000) && unary.request == nil)
        let capped = policy.deadlines(
            requested: try GRPCTimeout.parse("99999999H"), streaming: true, now: MonotonicInstant(nanoseconds: 0))
        #expect(capped.call == MonotonicInstant(nanoseconds: 1_800_000_000_000))
    }
}
