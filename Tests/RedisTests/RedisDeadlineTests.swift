import GatewayFoundation
import Testing

@testable import Redis

/// The deadline of one connect or pipeline: fixed when it starts, whatever arrives in between.
struct RedisDeadlineTests {
    let start = MonotonicInstant(nanoseconds: 5_000_000_000)

    @Test func eachWaitGetsOnlyWhatIsLeftOfTheOneDeadline() {
        let deadline = RedisDeadline(after: .milliseconds(50), from: start)
        #expect(deadline.pollMilliseconds(at: start) == 50)
        // A byte every 40 ms: the second wait has 10 ms, not another 50.
        #expect(deadline.pollMilliseconds(at: start + .milliseconds(40)) == 10)
        #expect(deadline.pollMilliseconds(at: start + .milliseconds(50)) == nil)
        #expect(deadline.pollMilliseconds(at: start + .milliseconds(80)) == nil)
    }

    @Test func aWaitNeverEndsBeforeTheDeadlineNorSpinsOnZero() {
        let deadline = RedisDeadline(after: .milliseconds(50), from: start)
        // 0.2 ms left is a wait of 1 ms (poll counts whole milliseconds), never of 0.
        #expect(deadline.pollMilliseconds(at: start + .microseconds(49_800)) == 1)
        #expect(deadline.pollMilliseconds(at: start + .microseconds(48_999)) == 2)
        #expect(deadline.pollMilliseconds(at: start + .nanoseconds(49_999_999)) == 1)
    }

    @Test func aHugeTimeoutIsAWaitPollCanTake() {
        let deadline = RedisDeadline(after: .seconds(100_000_000), from: start)
        #expect(deadline.pollMilliseconds(at: start) == Int32.max)
        #expect(RedisDeadline(after: .zero, from: start).pollMilliseconds(at: start) == nil)
    }

    @Test func passingTheDeadlineIsATimeoutNamingIt() {
        let failure = RedisDeadline(after: .milliseconds(50), from: start).failure(doing: "read")
        #expect(failure.kind == .timeout)
        #expect(failure.message.contains("50 ms"))
    }
}
