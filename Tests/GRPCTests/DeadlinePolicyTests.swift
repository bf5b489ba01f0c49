import Testing

@testable import GRPC

@Suite struct DeadlinePolicyTests {
    let policy = DeadlinePolicy(defaultMilliseconds: 120_000, maximumMilliseconds: 1_800_000)

    @Test func aCallWithoutTimeoutGetsTheDefault() {
        #expect(policy.timeout(requested: nil) == 120_000_000_000)
    }

    @Test func aLongerTimeoutIsCappedAndAShorterOneKept() {
        #expect(policy.timeout(requested: 3_600_000_000_000) == 1_800_000_000_000)
        #expect(policy.timeout(requested: 5_000_000) == 5_000_000)
        #expect(policy.timeout(requested: UInt64.max) == 1_800_000_000_000)
    }

    @Test func aDefaultAboveTheMaximumIsCappedToo() {
        let odd = DeadlinePolicy(defaultMilliseconds: 10_000, maximumMilliseconds: 1_000)
        #expect(odd.timeout(requested: nil) == 1_000_000_000)
    }

    @Test func theDeadlineSaturates() {
        let huge = DeadlinePolicy(defaultMilliseconds: UInt64.max, maximumMilliseconds: UInt64.max)
        #expect(huge.deadline(requested: nil, now: 10) == UInt64.max)
        #expect(policy.deadline(requested: 7, now: 100) == 107)
    }

    @Test func aStreamWithoutTimeoutIsBoundedOnlyUntilItsRequestArrives() {
        let streaming = policy.deadlines(requested: nil, streaming: true, now: 100)
        #expect(streaming.call == nil)
        #expect(streaming.request == 100 + 120_000_000_000)
    }

    @Test func aStreamWithATimeoutAndEveryUnaryCallHaveACallDeadline() {
        let timed = policy.deadlines(requested: 5_000_000, streaming: true, now: 100)
        #expect(timed.call == 5_000_100 && timed.request == nil)
        let unary = policy.deadlines(requested: nil, streaming: false, now: 100)
        #expect(unary.call == 100 + 120_000_000_000 && unary.request == nil)
        let capped = policy.deadlines(requested: .max, streaming: true, now: 0)
        #expect(capped.call == 1_800_000_000_000)
    }
}
