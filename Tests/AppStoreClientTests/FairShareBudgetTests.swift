import AppStoreDomain
import GatewayFoundation
import Testing

@testable import AppStoreClient

/// A bucket with no token until the test grants one; it says its next token is a second away.
private final class GatedBudget: RateBudget {
    private let tokens = Lock(0)

    func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation {
        tokens.withLock { tokens in
            guard tokens > 0 else { return .refused(retryAfter: .seconds(1)) }
            tokens -= 1
            return .goNow
        }
    }

    func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {}

    func grant() { tokens.withLock { $0 += 1 } }
}

/// The pump's sleep: suspended until the test wakes it.
private final class Sleeper: Sendable {
    private let sleepers = Lock<[CheckedContinuation<Void, Never>]>([])

    func sleep(_ duration: Duration) async {
        await withCheckedContinuation { continuation in sleepers.withLock { $0.append(continuation) } }
    }

    var sleeping: Int { sleepers.withLock { $0.count } }

    func wake() {
        for sleeper in sleepers.withLock({ sleepers in
            defer { sleepers.removeAll() }; return sleepers
        }) {
            sleeper.resume()
        }
    }
}

private final class Order: Sendable {
    private let served = Lock<[String]>([])
    func add(_ caller: String) { served.withLock { $0.append(caller) } }
    var all: [String] { served.withLock { $0 } }
}

@Suite struct FairShareBudgetTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)

    /// Polls a condition the budget reaches asynchronously (its pump is a task); fails after 5 s.
    func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<5_000 where !condition() { try await Task.sleep(for: .milliseconds(1)) }
        #expect(condition())
    }

    func call(
        _ budget: FairShareBudget, _ caller: String, clock: any GatewayClock = SystemClock(),
        maxWait: Duration = .seconds(60)
    ) async -> TokenBucket.Reservation {
        let identity = CallerIdentity(identity: caller, source: .jwt, weight: 1, listed: true)
        return await CallerIdentity.$current.withValue(identity) {
            await budget.reserve(key: key, now: clock.monotonicNow(), maxWait: maxWait)
        }
    }

    @Test func tokensAlternateBetweenTwoCallersOfEqualWeightHoweverManyTheFirstQueued() async throws {
        let inner = GatedBudget()
        let sleeper = Sleeper()
        let budget = FairShareBudget(inner: inner, clock: SystemClock(), sleep: { await sleeper.sleep($0) })
        let order = Order()
        func call(_ caller: String) -> Task<Void, Never> {
            Task { if await self.call(budget, caller) == .goNow { order.add(caller) } }
        }
        // The flood queues first: all six wait, the pump sleeps until the bucket has a token.
        let flood = (0..<6).map { _ in call("flood") }
        try await eventually { budget.waiting(key) == 6 && sleeper.sleeping == 1 }
        let quiet = (0..<6).map { _ in call("quiet") }
        try await eventually { budget.waiting(key) == 12 }
        for served in 1...12 {
            inner.grant()
            sleeper.wake()
            try await eventually { order.all.count == served && (served == 12 || sleeper.sleeping == 1) }
        }
        for task in flood + quiet { await task.value }
        #expect(order.all == Array(repeating: ["flood", "quiet"], count: 6).flatMap { $0 })
    }

    @Test func aTokenGoesToTheFairestCallerWaitingWhenItComesNotToTheOneWaitingWhenThePumpAsked() async throws {
        let inner = GatedBudget()
        let sleeper = Sleeper()
        let budget = FairShareBudget(inner: inner, clock: SystemClock(), sleep: { await sleeper.sleep($0) })
        let order = Order()
        func call(_ caller: String) -> Task<Void, Never> {
            Task { if await self.call(budget, caller) == .goNow { order.add(caller) } }
        }
        let flood = (0..<3).map { _ in call("flood") }
        try await eventually { budget.waiting(key) == 3 && sleeper.sleeping == 1 }
        inner.grant()
        sleeper.wake()
        try await eventually { order.all == ["flood"] && sleeper.sleeping == 1 }
        // The pump asked and sleeps with only the flood waiting; the quiet caller arrives during the sleep.
        let quiet = call("quiet")
        try await eventually { budget.waiting(key) == 3 }
        inner.grant()
        sleeper.wake()
        try await eventually { order.all == ["flood", "quiet"] && sleeper.sleeping == 1 }
        for _ in 0..<2 {
            inner.grant()
            sleeper.wake()
            try await eventually { sleeper.sleeping == 1 || order.all.count == 4 }
        }
        for task in flood + [quiet] { await task.value }
        #expect(order.all == ["flood", "quiet", "flood", "flood"])
    }

    @Test func callersWithoutAListedIdentityGoStraightToTheInnerBudget() async {
        let limiter = RateLimiter(
            defaults: RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 1, burst: 1)]))
        let budget = FairShareBudget(inner: limiter, clock: SystemClock(), sleep: { _ in })
        let now = MonotonicInstant(nanoseconds: 1_000_000_000)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        // Open mode: the inner bucket's own answer, a future slot reserved in place.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(5)) == .goAfter(.seconds(1)))
        #expect(budget.waiting(key) == 0)
    }

    @Test func aCallWhoseDeadlineIsBeforeTheNextTokenIsRefusedAtOnceWithThatDelay() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(
            defaults: RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 1, burst: 1)]))
        let sleeper = Sleeper()
        let budget = FairShareBudget(inner: limiter, clock: clock, sleep: { await sleeper.sleep($0) })
        #expect(await call(budget, "a", clock: clock) == .goNow)  // the free token, at once
        // The next token is a second away: "a" waits for it, "b" (20 ms) cannot get it and is told so at once.
        let waiting = Task { await call(budget, "a", clock: clock) }
        try await eventually { budget.waiting(key) == 1 && sleeper.sleeping == 1 }
        #expect(await call(budget, "b", clock: clock, maxWait: .milliseconds(20)) == .refused(retryAfter: .seconds(1)))
        #expect(budget.waiting(key) == 1)
        clock.advance(by: .seconds(1))
        sleeper.wake()
        #expect(await waiting.value == .goNow)
        #expect(budget.waiting(key) == 0)
    }

    @Test func waitersTheNextTokenCannotReachInTimeAreRefusedWhenItsTimeIsKnown() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(
            defaults: RateLimits(overrides: [.getTransactionHistory: EndpointRate(perSecond: 1, burst: 1)]))
        let sleeper = Sleeper()
        let budget = FairShareBudget(inner: limiter, clock: clock, sleep: { await sleeper.sleep($0) })
        #expect(await call(budget, "a", clock: clock) == .goNow)
        let first = Task { await call(budget, "a", clock: clock, maxWait: .seconds(1)) }
        try await eventually { sleeper.sleeping == 1 }
        // Waits 1.5 s; the token at 1 s goes to "a" (its earlier call), the next one is due at 2 s.
        let second = Task { await call(budget, "a", clock: clock, maxWait: .milliseconds(1_500)) }
        try await eventually { budget.waiting(key) == 2 }
        clock.advance(by: .seconds(1))
        sleeper.wake()
        #expect(await first.value == .goNow)
        #expect(await second.value == .refused(retryAfter: .milliseconds(1_500)))
        #expect(budget.waiting(key) == 0)
    }
}
