import AppStoreDomain
import GatewayFoundation
import Synchronization
import Testing

@testable import Services

/// Coalescing identical calls: one run of the work for N identical concurrent callers, in the first caller's
/// own task; distinct keys never merged; a follower leaving alone; a leader leaving hands the work on.
@Suite struct SingleFlightTests {
    /// Counts runs of the work and joins, and holds the work until told.
    final class Probe: Sendable {
        let runs = Atomic<Int>(0)
        let joins = Atomic<Int>(0)
        let released = Atomic<Bool>(false)
        /// Identities (hash values) of the tasks the work ran in.
        let runningTasks = Lock<[Int]>([])

        func joined() { joins.add(1, ordering: .relaxed) }

        /// The work: counted, noting the task it runs in, held until `release` (or cancelled).
        func work(_ value: Int) async -> Result<Int, GatewayError> {
            runs.add(1, ordering: .relaxed)
            if let task = withUnsafeCurrentTask(body: { $0?.hashValue }) { runningTasks.withLock { $0.append(task) } }
            while !released.load(ordering: .relaxed) {
                do { try await Task.sleep(for: .milliseconds(2)) } catch { return .failure(.cancelled) }
            }
            return .success(value)
        }

        func release() { released.store(true, ordering: .relaxed) }

        func waitForJoins(_ count: Int) async {
            while joins.load(ordering: .relaxed) < count { try? await Task.sleep(for: .milliseconds(2)) }
        }

        func waitForRuns(_ count: Int) async {
            while runs.load(ordering: .relaxed) < count { try? await Task.sleep(for: .milliseconds(2)) }
        }
    }

    @Test func identicalConcurrentCallsRunTheWorkOnceInTheFirstCallersTask() async {
        let flights = SingleFlight<[UInt8], Int>()
        let probe = Probe()
        let leaderTask = Lock<Int?>(nil)
        let leader = Task {
            let task = withUnsafeCurrentTask { $0?.hashValue }
            leaderTask.withLock { $0 = task }
            return await flights.run(key: [1, 2, 3], joined: probe.joined) { await probe.work(7) }
        }
        await probe.waitForRuns(1)
        let followers = (0..<9).map { _ in
            Task { await flights.run(key: [1, 2, 3], joined: probe.joined) { await probe.work(8) } }
        }
        await probe.waitForJoins(9)
        #expect(flights.inFlight == 1)
        probe.release()
        guard case .success(7) = await leader.value else { return #expect(Bool(false)) }
        for follower in followers {
            guard case .success(7) = await follower.value else { return #expect(Bool(false)) }
        }
        #expect(probe.runs.load(ordering: .relaxed) == 1)
        #expect(probe.joins.load(ordering: .relaxed) == 9)
        #expect(flights.inFlight == 0)
        // The work ran in the leader's own task: no task was started for it.
        let ran = probe.runningTasks.withLock { $0 }
        #expect(ran.count == 1 && ran.first == leaderTask.withLock { $0 })
    }

    @Test func distinctKeysAreNeverMerged() async {
        let flights = SingleFlight<[UInt8], Int>()
        let probe = Probe()
        let first = Task { await flights.run(key: [1], joined: probe.joined) { await probe.work(1) } }
        let second = Task { await flights.run(key: [1, 0], joined: probe.joined) { await probe.work(2) } }
        await probe.waitForRuns(2)
        #expect(flights.inFlight == 2)
        probe.release()
        guard case .success(1) = await first.value, case .success(2) = await second.value else {
            return #expect(Bool(false))
        }
        #expect(probe.joins.load(ordering: .relaxed) == 0)
    }

    @Test func aCancelledFollowerLeavesAtOnceAndTheOthersStay() async {
        let flights = SingleFlight<[UInt8], Int>()
        let probe = Probe()
        let leader = Task { await flights.run(key: [9], joined: probe.joined) { await probe.work(5) } }
        await probe.waitForRuns(1)
        let leaving = Task { await flights.run(key: [9], joined: probe.joined) { await probe.work(6) } }
        let staying = Task { await flights.run(key: [9], joined: probe.joined) { await probe.work(6) } }
        await probe.waitForJoins(2)
        leaving.cancel()
        guard case .failure(.cancelled) = await leaving.value else { return #expect(Bool(false)) }
        probe.release()
        guard case .success(5) = await leader.value, case .success(5) = await staying.value else {
            return #expect(Bool(false))
        }
        #expect(probe.runs.load(ordering: .relaxed) == 1)
    }

    @Test func aCancelledLeaderHandsTheWorkToAFollower() async {
        let flights = SingleFlight<[UInt8], Int>()
        let probe = Probe()
        let leader = Task { await flights.run(key: [4], joined: probe.joined) { await probe.work(1) } }
        await probe.waitForRuns(1)
        let followers = (0..<3).map { _ in
            Task { await flights.run(key: [4], joined: probe.joined) { await probe.work(2) } }
        }
        await probe.waitForJoins(3)
        leader.cancel()
        guard case .failure(.cancelled) = await leader.value else { return #expect(Bool(false)) }
        // One follower leads a new flight; the others follow it and are not counted as joining twice.
        await probe.waitForRuns(2)
        probe.release()
        for follower in followers {
            guard case .success(2) = await follower.value else { return #expect(Bool(false)) }
        }
        #expect(probe.runs.load(ordering: .relaxed) == 2)
        #expect(probe.joins.load(ordering: .relaxed) == 3)
        #expect(flights.inFlight == 0)
    }

    /// Followers cancelled while their flight lands, over and over: every caller gets an answer. Delivering
    /// used to resume a follower's continuation under the member's lock, while the follower's cancellation
    /// (holding its task's status lock) waited for that lock in `leave()`: the two threads deadlocked, an
    /// event loop among them, under a GetHistory load with clients going away.
    @Test(.timeLimit(.minutes(1)))
    func followersCancelledAsTheirFlightLandsAlwaysReturn() async {
        let flight = SingleFlight<Int, Int>()
        for round in 0..<300 {
            let leader = Task { await flight.run(key: round) { .success(round) } }
            let followers = (0..<4).map { _ in Task { await flight.run(key: round) { .success(round) } } }
            let landed = await withTaskGroup(of: Bool.self) { group in
                for follower in followers {
                    group.addTask {
                        follower.cancel()
                        _ = await follower.value
                        return true
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            _ = await leader.value
            #expect(landed == 4)
        }
    }
}
