import GatewayCore
import Synchronization
import Testing

@testable import AppStoreClient

/// A budget with no token to spare: every reservation that may wait blocks until the test grants a token.
private final class GatedBudget: RateBudget {
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])

    func reserve(key: RateLimitKey, now: MonotonicInstant, maxWait: Duration) async -> TokenBucket.Reservation {
        guard maxWait > .zero else { return .refused(retryAfter: .milliseconds(250)) }
        await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
        return .goNow
    }

    func block(key: RateLimitKey, for delay: Duration, now: MonotonicInstant) async {}

    var pending: Int { waiting.withLock { $0.count } }

    func grant() {
        let next = waiting.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        next?.resume()
    }
}

private final class Order: Sendable {
    private let served = Mutex<[String]>([])
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

    @Test func tokensAlternateBetweenTwoCallersOfEqualWeightHoweverManyTheFirstQueued() async throws {
        let inner = GatedBudget()
        let budget = FairShareBudget(inner: inner, clock: SystemClock(), sleep: { _ in })
        let order = Order()
        func call(_ caller: String, weight: Int = 1) -> Task<Void, Never> {
            Task {
                let identity = CallerIdentity(identity: caller, source: .jwt, weight: weight, listed: true)
                let answer = await CallerIdentity.$current.withValue(identity) {
                    await budget.reserve(key: key, now: SystemClock().monotonicNow(), maxWait: .seconds(60))
                }
                if answer == .goNow { order.add(caller) }
            }
        }
        // The flood queues first: one call holds the pump's reservation, five wait.
        let flood = (0..<6).map { _ in call("flood") }
        try await eventually { inner.pending == 1 && budget.waiting(key) == 5 }
        let quiet = (0..<6).map { _ in call("quiet") }
        try await eventually { budget.waiting(key) == 11 }
        for served in 1...12 {
            inner.grant()
            try await eventually { order.all.count == served && (served == 12 || inner.pending == 1) }
        }
        for task in flood + quiet { await task.value }
        #expect(order.all == Array(repeating: ["flood", "quiet"], count: 6).flatMap { $0 })
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

    @Test func aWaiterPastItsMaxWaitIsRefused() async throws {
        let inner = GatedBudget()
        let clock = ManualClock()
        let budget = FairShareBudget(inner: inner, clock: clock, sleep: { _ in })
        let identity = CallerIdentity(identity: "a", source: .jwt, weight: 1, listed: true)
        let first = Task {
            await CallerIdentity.$current.withValue(identity) {
                await budget.reserve(key: key, now: clock.monotonicNow(), maxWait: .seconds(60))
            }
        }
        try await eventually { inner.pending == 1 }
        // Queued behind the held reservation, willing to wait 20 ms; the clock then moves a second on.
        let second = Task {
            await CallerIdentity.$current.withValue(identity) {
                await budget.reserve(key: key, now: clock.monotonicNow(), maxWait: .milliseconds(20))
            }
        }
        try await eventually { budget.waiting(key) == 1 }
        clock.advance(by: .seconds(1))
        inner.grant()
        #expect(await first.value == .goNow)
        guard case .refused = await second.value else {
            Issue.record("a call past its maxWait was served")
            return
        }
        #expect(inner.pending == 0)
    }
}
