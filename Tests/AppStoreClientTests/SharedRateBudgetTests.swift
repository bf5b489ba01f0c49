import Foundation
import GatewayCore
import Testing

@testable import AppStoreClient

/// The shared budget against a real redis-server (started per test on a free loopback port, no
/// persistence): the Lua script's bucket and block semantics, two replicas sharing them, and the local
/// fallback when Redis is unreachable.
@Suite(.serialized, .enabled(if: RedisProcess.executable != nil, "redis-server is not installed"))
struct SharedRateBudgetTests {
    let key = RateLimitKey(bundleID: "com.example.app", endpoint: .getTransactionHistory, environment: .production)
    // 2/s: slow enough that a loaded machine's scheduling delays never refill a token between two steps.
    static let rate = EndpointRate(perSecond: 2, burst: 2)
    let limits = RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: rate]))

    func budget(port: Int, prefix: String = "t:", recorder: Recorder = Recorder()) -> SharedRateBudget {
        var settings = GatewayConfiguration.Redis()
        settings.url = RedisURL(host: "127.0.0.1", port: port)
        settings.keyPrefix = prefix
        return SharedRateBudget(
            settings: settings, limits: limits,
            fallback: RateLimiter(defaults: RateLimits(overrides: [.getTransactionHistory: Self.rate]).scaled(by: 0.5)),
            appNames: [:], reservationHorizon: .milliseconds(300), events: recorder)
    }

    @Test func theSharedBucketAdmitsTheBurstThenSchedulesTokensAtTheRate() async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let budget = budget(port: redis.port)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        guard case .refused(let retryAfter) = await budget.reserve(key: key, now: now, maxWait: .zero) else {
            Issue.record("a third token was granted from a burst of 2")
            return
        }
        #expect(retryAfter > .zero && retryAfter <= .milliseconds(500))
        // A slot within maxWait is reserved and waited for inside the budget, which then lets the call go.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(1)) == .goNow)
        #expect(budget.currentMode == .shared)
    }

    /// Two replicas' budgets on one fresh Redis, handed to `body`, then shut down with it.
    func withTwoReplicas(_ body: (SharedRateBudget, SharedRateBudget) async throws -> Void) async throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let first = budget(port: redis.port)
        let second = budget(port: redis.port)
        defer { first.shutdown(); second.shutdown() }
        try await body(first, second)
    }

    @Test func twoReplicasSpendOneBucketAndHonourOneBlock() async throws {
        try await withTwoReplicas { first, second in
            let now = MonotonicInstant(nanoseconds: 0)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await second.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) != .goNow)
            // Apple's 429 seen by the first replica holds the second.
            await first.block(key: key, for: .seconds(5), now: now)
            guard case .refused(let retryAfter) = await second.reserve(key: key, now: now, maxWait: .seconds(1)) else {
                Issue.record("the other replica ignored the shared block")
                return
            }
            #expect(retryAfter > .seconds(4) && retryAfter <= .seconds(5))
        }
    }

    @Test func aBlockStoredWhileACallWaitsForItsSlotHoldsThatCall() async throws {
        try await withTwoReplicas { first, second in
            let now = MonotonicInstant(nanoseconds: 0)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            #expect(await first.reserve(key: key, now: now, maxWait: .zero) == .goNow)
            // The second replica's caller gets a slot ~500 ms ahead; Apple's 429 reaches the first meanwhile.
            let waiting = Task { await second.reserve(key: key, now: now, maxWait: .seconds(1)) }
            await first.block(key: key, for: .seconds(5), now: now)
            guard case .refused(let retryAfter) = await waiting.value else {
                Issue.record("a call that waited for its slot went to Apple during a shared Retry-After")
                return
            }
            #expect(retryAfter > .seconds(4))
        }
    }

    @Test func aReplyLaterThanTheCommandTimeoutIsATimeoutNotAProtocolError() throws {
        let redis = try RedisProcess()
        defer { redis.stop() }
        let connection = RedisConnection(url: RedisURL(host: "127.0.0.1", port: redis.port), timeout: .milliseconds(50))
        try connection.connect()
        do {
            _ = try connection.pipeline([["BLPOP", "nothing-ever-arrives", "2"]])  // Redis answers after 2 s
            Issue.record("a reply 2 s late was not a timeout")
        } catch {
            #expect(error.kind == .timeout, "\(error.message)")
        }
        #expect(!connection.isConnected)
    }

    @Test func anUnreachableRedisFallsBackToTheLocalShareOnceTheSharedSlotsHavePassed() async throws {
        let port = try RedisProcess.freePort()  // nothing listens there
        let recorder = Recorder()
        let budget = budget(port: port, recorder: recorder)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        // Shared slots may have been reserved up to the horizon (300 ms) before Redis went: the local share
        // (1/s, burst 1) gives its first token one interval (1 s) after that, never earlier.
        guard case .refused(let retryAfter) = await budget.reserve(key: key, now: now, maxWait: .zero) else {
            Issue.record("a local token was given while shared slots could still be spent")
            return
        }
        #expect(retryAfter > .milliseconds(1_000) && retryAfter <= .milliseconds(1_300))
        // A caller who can wait that long gets the token: the outage costs a wait, not a failure.
        #expect(await budget.reserve(key: key, now: now, maxWait: .seconds(2)) == .goNow)
        #expect(budget.currentMode != .shared)
        #expect(recorder.outcomes.contains(.fallback))
        #expect(recorder.transitions == [.fellBack])
    }

    @Test func aRestartedRedisIsFoundByTheProbeAndTheScriptReloaded() async throws {
        let port = try RedisProcess.freePort()
        let recorder = Recorder()
        let budget = budget(port: port, recorder: recorder)
        defer { budget.shutdown() }
        let now = MonotonicInstant(nanoseconds: 0)
        _ = await budget.reserve(key: key, now: now, maxWait: .seconds(1))
        #expect(budget.currentMode != .shared)
        let redis = try RedisProcess(port: port)
        defer { redis.stop() }
        var waited = 0
        while budget.currentMode != .shared && waited < 50 {
            try await Task.sleep(for: .milliseconds(100))
            waited += 1
        }
        #expect(budget.currentMode == .shared)
        #expect(await budget.reserve(key: key, now: now, maxWait: .zero) == .goNow)
        #expect(recorder.transitions == [.fellBack, .restored])
    }
}

/// Records the shared budget's events for assertions.
final class Recorder: SharedBudgetEvents, @unchecked Sendable {
    private let lock = NSLock()
    private var _outcomes: [SharedBudgetOutcome] = []
    private var _transitions: [SharedBudgetMode.Transition] = []
    var outcomes: [SharedBudgetOutcome] { lock.withLock { _outcomes } }
    var transitions: [SharedBudgetMode.Transition] { lock.withLock { _transitions } }

    func sharedBudgetReservation(app: String, endpoint: String, outcome: SharedBudgetOutcome) {
        lock.withLock { _outcomes.append(outcome) }
    }
    func sharedBudgetMode(_ state: SharedBudgetMode.State, transition: SharedBudgetMode.Transition?) {
        if let transition { lock.withLock { _transitions.append(transition) } }
    }
    func redisRoundTrip(seconds: Double, commands: Int, failure: RedisFailureKind?) {}
}

/// A redis-server child process on a loopback port, without persistence.
final class RedisProcess {
    static let executable: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    let port: Int
    private let process = Process()

    init(port: Int? = nil) throws {
        self.port = try port ?? Self.freePort()
        process.executableURL = URL(fileURLWithPath: Self.executable ?? "/usr/bin/redis-server")
        process.arguments = ["--port", String(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it accepts a connection.
        for _ in 0..<100 {
            if Self.accepts(port: self.port) { return }
            usleep(50_000)
        }
        stop()
        throw CocoaError(.fileReadUnknown)
    }

    func stop() {
        // SIGKILL by pid, then wait until the port is free: Foundation's terminate/waitUntilExit proved
        // unreliable on a concurrency thread here (a spinning run loop, a child left running).
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        for _ in 0..<200 where Self.accepts(port: port) { usleep(10_000) }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileReadUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
