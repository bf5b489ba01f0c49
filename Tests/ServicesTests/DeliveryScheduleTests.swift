import Services
import Testing

/// The outbound sinks' schedule, pure: no socket, no sleep; time is a number.
@Suite struct DeliveryScheduleTests {
    typealias Schedule = DeliverySchedule<String>

    static func schedule(
        maxBackoff: Int64 = 300_000, maxAge: Int64 = 86_400_000, watermark: Int64 = 0, settled: Set<Int64> = [],
        maxInFlight: Int = 64, maxWindow: Int = 4096
    ) -> Schedule {
        var policy = Schedule.Policy(maxBackoff: maxBackoff, maxAge: maxAge)
        policy.maxInFlight = maxInFlight
        policy.maxWindow = maxWindow
        return Schedule(policy: policy, watermark: watermark, settled: settled)
    }

    @Test func eventsOfOneSubscriptionGoOneAtATimeInOrderAndOthersAreNotHeldUp() {
        var schedule = Self.schedule()
        schedule.offer(position: 1, lane: "a", item: "a1")
        schedule.offer(position: 2, lane: "a", item: "a2")
        schedule.offer(position: 3, lane: "b", item: "b1")
        schedule.offer(position: 4, lane: "a", item: "a3")
        schedule.offer(position: 5, lane: "b", item: "b2")
        // Only each lane's head is sent.
        #expect(schedule.ready(now: 0).map(\.item) == ["a1", "b1"])
        #expect(schedule.ready(now: 0).isEmpty)
        // a1 keeps failing: b's events go on meanwhile.
        #expect(schedule.failed(1, now: 10, problem: "HTTP 500") == .retry(at: 1_010))
        schedule.acknowledged(3, now: 20)
        #expect(schedule.ready(now: 20).map(\.item) == ["b2"])
        schedule.acknowledged(5, now: 30)
        #expect(schedule.ready(now: 1_009).isEmpty)
        // a1 again; only after its acknowledgement does a2 go, then a3.
        #expect(schedule.ready(now: 1_010).map { "\($0.item)#\($0.attempt)" } == ["a1#2"])
        schedule.acknowledged(1, now: 1_020)
        #expect(schedule.ready(now: 1_020).map(\.item) == ["a2"])
        schedule.acknowledged(2, now: 1_030)
        #expect(schedule.ready(now: 1_030).map(\.item) == ["a3"])
        schedule.acknowledged(4, now: 1_040)
        #expect(schedule.isIdle)
        #expect(schedule.watermark == 5)
    }

    /// With every attempt slot taken (a stalled endpoint), nothing is due: the sink sleeps until an attempt ends
    /// instead of spinning (and a head due at once, `Int64.min`, never reaches the sink's timer arithmetic).
    @Test func nothingIsDueWhileEveryAttemptSlotIsTaken() {
        var schedule = Self.schedule(maxInFlight: 2)
        for position in 1...4 { schedule.offer(position: Int64(position), lane: "l\(position)", item: "e\(position)") }
        #expect(schedule.nextDue == Int64.min)
        #expect(schedule.ready(now: 100).count == 2)
        #expect(schedule.nextDue == nil)
        schedule.acknowledged(1, now: 200)
        #expect(schedule.nextDue == Int64.min)
        #expect(schedule.ready(now: 200).map(\.item) == ["e3"])
        #expect(schedule.nextDue == nil)
    }

    @Test func retriesStartWithinOneSecondAndDoubleUpToMaxBackoff() {
        let policy = Schedule.Policy(maxBackoff: 10_000, maxAge: 86_400_000)
        #expect(
            (1...8).map { policy.backoff(afterFailures: $0) } == [
                1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000, 10_000,
            ])
        // A maxBackoff under a second caps the first retry too.
        #expect(Schedule.Policy(maxBackoff: 200, maxAge: 1).backoff(afterFailures: 1) == 200)

        var schedule = Self.schedule(maxBackoff: 10_000)
        schedule.offer(position: 7, lane: "a", item: "x")
        var now: Int64 = 500
        var delays: [Int64] = []
        for _ in 0..<7 {
            let sent = schedule.ready(now: now)
            #expect(sent.count == 1)
            guard case .retry(let at)? = schedule.failed(7, now: now, problem: "timed out") else {
                Issue.record("expected a retry")
                return
            }
            delays.append(at - now)
            #expect(schedule.nextDue == at)
            #expect(schedule.ready(now: at - 1).isEmpty)
            now = at
        }
        #expect(delays == [1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000])
    }

    @Test func anEventStillFailingMaxAgeAfterItsFirstAttemptIsDeadLetteredAndFreesItsSubscription() {
        var schedule = Self.schedule(maxBackoff: 300_000, maxAge: 2_000)
        schedule.offer(position: 1, lane: "a", item: "a1")
        schedule.offer(position: 2, lane: "a", item: "a2")
        #expect(schedule.ready(now: 100).map(\.item) == ["a1"])
        #expect(schedule.failed(1, now: 150, problem: "refused") == .retry(at: 1_150))
        #expect(schedule.ready(now: 1_150).count == 1)
        // The doubled delay (2 s) would pass the deadline: the last try is at first attempt + maxAge.
        #expect(schedule.failed(1, now: 1_200, problem: "HTTP 503") == .retry(at: 2_100))
        #expect(schedule.ready(now: 2_100).count == 1)
        let verdict = schedule.failed(1, now: 2_110, problem: "HTTP 500")
        #expect(
            verdict
                == .deadLetter(
                    Schedule.DeadLetter(
                        position: 1, attempts: 3, firstAttemptAt: 100, deadAt: 2_110, lastError: "HTTP 500")
                ))
        // The next event of the subscription goes at once.
        #expect(schedule.ready(now: 2_110).map(\.item) == ["a2"])
        #expect(schedule.watermark == 1)
        let progress = schedule.takeProgress()
        #expect(progress.through == 1)
    }

    @Test func theWatermarkStopsAtTheOldestUnsettledEventAndOutOfOrderAcksAreReported() {
        var schedule = Self.schedule(watermark: 10)
        for position in Int64(11)...15 { schedule.offer(position: position, lane: "lane-\(position)", item: "e") }
        #expect(schedule.ready(now: 0).count == 5)
        schedule.acknowledged(13, now: 1)
        schedule.acknowledged(15, now: 1)
        #expect(schedule.watermark == 10)
        #expect(schedule.hasProgress)
        var progress = schedule.takeProgress()
        #expect(progress.through == 10 && progress.settled.sorted() == [13, 15])
        #expect(!schedule.hasProgress)
        schedule.acknowledged(11, now: 2)
        progress = schedule.takeProgress()
        #expect(progress.through == 11 && progress.settled.isEmpty)
        schedule.acknowledged(12, now: 3)
        progress = schedule.takeProgress()
        #expect(progress.through == 13)
        #expect(schedule.oldestUnsettled == 14)
        schedule.acknowledged(14, now: 4)
        #expect(schedule.takeProgress().through == 15)
        // Positions read that were not for this sink move it too, once nothing before them is open.
        schedule.skip(through: 40)
        #expect(schedule.watermark == 40)
    }

    @Test func aRestartSkipsWhatWasAcknowledgedAboveTheWatermark() {
        var schedule = Self.schedule(watermark: 10, settled: [12, 14])
        for position in Int64(11)...14 { schedule.offer(position: position, lane: "a", item: "e\(position)") }
        #expect(schedule.ready(now: 0).map(\.item) == ["e11"])
        schedule.acknowledged(11, now: 1)
        #expect(schedule.watermark == 12)
        #expect(schedule.ready(now: 1).map(\.item) == ["e13"])
        schedule.acknowledged(13, now: 2)
        #expect(schedule.watermark == 14)
        #expect(schedule.isIdle)
    }

    @Test func inFlightAndWindowAreBounded() {
        var schedule = Self.schedule(maxInFlight: 2, maxWindow: 3)
        #expect(schedule.room == 3)
        schedule.offer(position: 1, lane: "a", item: "a")
        schedule.offer(position: 2, lane: "b", item: "b")
        schedule.offer(position: 3, lane: "c", item: "c")
        #expect(schedule.room == 0)
        #expect(schedule.ready(now: 0).map(\.position) == [1, 2])
        #expect(schedule.inFlight == 2)
        schedule.acknowledged(2, now: 1)
        // Settled but above the watermark (1 is open): still in the window.
        #expect(schedule.room == 0)
        #expect(schedule.ready(now: 1).map(\.position) == [3])
        schedule.acknowledged(1, now: 2)
        #expect(schedule.room == 2)
    }

    @Test func dueEventsGoOldestDueFirst() {
        var schedule = Self.schedule(maxInFlight: 1)
        schedule.offer(position: 1, lane: "a", item: "a")
        schedule.offer(position: 2, lane: "b", item: "b")
        #expect(schedule.ready(now: 0).map(\.position) == [1])
        #expect(schedule.failed(1, now: 0, problem: "x") == .retry(at: 1_000))
        #expect(schedule.ready(now: 0).map(\.position) == [2])
        #expect(schedule.failed(2, now: 500, problem: "x") == .retry(at: 1_500))
        #expect(schedule.ready(now: 2_000).map(\.position) == [1])
        schedule.acknowledged(1, now: 2_000)
        #expect(schedule.ready(now: 2_000).map(\.position) == [2])
    }
}
