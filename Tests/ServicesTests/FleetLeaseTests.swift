import EventLoops
import GatewayFoundation
import NotificationStore
import Testing

@testable import Services

/// Work once per fleet (`FleetLease`): of two replicas asking for one lease, one works and the other takes over
/// when it stops; a holder that cannot renew stops before its lease could go to another; one replica works at
/// once.
@Suite struct FleetLeaseTests {
    /// Leases in memory with the store's rules (one holder, free once `ttl` passes unrenewed), shared by a test's
    /// replicas; `mode` makes every `hold` fail or hang, as a store that is down or stuck.
    final class TableLeases: FleetLeases {
        enum Mode: Sendable {
            case up
            case failing
            case hanging
        }

        private let table = Lock<[String: (holder: String, expires: ContinuousClock.Instant)]>([:])
        let mode = Lock(Mode.up)
        var isShared: Bool { true }

        func hold(_ name: String, holder: String, for ttl: Duration) async throws(NotificationStoreFailure) -> Bool {
            switch mode.withLock({ $0 }) {
            case .up: break
            case .failing: throw NotificationStoreFailure("the store is down")
            case .hanging:
                try? await Task.sleep(for: .seconds(3_600))
                throw NotificationStoreFailure("no answer")
            }
            let now = ContinuousClock.now
            return table.withLock { table in
                if let lease = table[name], lease.holder != holder, lease.expires > now { return false }
                table[name] = (holder, now + ttl)
                return true
            }
        }

        func release(_ name: String, holder: String) async throws(NotificationStoreFailure) {
            table.withLock { table in
                if table[name]?.holder == holder { table[name] = nil }
            }
        }

        /// Who holds `name` and until when (nil: nobody ever did, or it was released).
        func lease(_ name: String) -> (holder: String, expires: ContinuousClock.Instant)? {
            table.withLock { $0[name] }
        }
    }

    /// Who works: the replicas at work now, the most ever at work at once, and when each stopped.
    final class Workers: Sendable {
        private struct State {
            var working: Set<String> = []
            var most = 0
            var starts: [String] = []
            var stops: [(holder: String, at: ContinuousClock.Instant)] = []
        }

        private let state = Lock(State())

        var working: Set<String> { state.withLock { $0.working } }
        var most: Int { state.withLock { $0.most } }
        var starts: [String] { state.withLock { $0.starts } }
        var stops: [(holder: String, at: ContinuousClock.Instant)] { state.withLock { $0.stops } }

        /// Work that runs until it is cancelled.
        func work(_ holder: String) -> @Sendable () async -> Void {
            { [self] in
                state.withLock { state in
                    state.working.insert(holder)
                    state.starts.append(holder)
                    state.most = max(state.most, state.working.count)
                }
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                state.withLock { state in
                    state.working.remove(holder)
                    state.stops.append((holder, .now))
                }
            }
        }
    }

    @Test func withOneReplicaTheWorkSimplyRuns() async {
        let ran = Lock(0)
        await FleetLease.soleReplica.run("notification-reconciler") { ran.withLock { $0 += 1 } }
        #expect(ran.withLock { $0 } == 1)
    }

    @Test func oneOfTwoReplicasWorksAndTheOtherTakesOverWhenItStops() async throws {
        let leases = TableLeases()
        let workers = Workers()
        let ttl: Duration = .milliseconds(600)
        let replicas = ["a", "b"].map { holder in
            Task { await FleetLease(leases: leases, holder: holder, ttl: ttl).run("timer", workers.work(holder)) }
        }
        try await EventSinkTests.eventually { workers.working.count == 1 }
        // Renewals keep the lease with its holder well past its ttl.
        try await Task.sleep(for: ttl * 2)
        let first = try #require(workers.starts.first)
        #expect(workers.starts == [first])
        #expect(workers.working == [first])
        // The holder stops (a shutdown): it releases the lease and the other replica takes over.
        let (stopping, other) = first == "a" ? (0, "b") : (1, "a")
        replicas[stopping].cancel()
        await replicas[stopping].value
        try await EventSinkTests.eventually { workers.working == [other] }
        #expect(workers.most == 1)
        replicas[1 - stopping].cancel()
        await replicas[1 - stopping].value
        #expect(workers.working.isEmpty)
        #expect(leases.lease("timer") == nil)
    }

    @Test(arguments: [TableLeases.Mode.failing, .hanging])
    func aHolderThatCannotRenewStopsBeforeItsLeaseExpires(_ mode: TableLeases.Mode) async throws {
        let leases = TableLeases()
        let workers = Workers()
        let ttl: Duration = .milliseconds(900)
        let a = Task { await FleetLease(leases: leases, holder: "a", ttl: ttl).run("sink", workers.work("a")) }
        try await EventSinkTests.eventually { workers.working == ["a"] }
        leases.mode.withLock { $0 = mode }
        // A renewal that had passed the switch when it came lands within this pause.
        try await Task.sleep(for: .milliseconds(50))
        let expires = try #require(leases.lease("sink")?.expires)
        try await EventSinkTests.eventually { workers.working.isEmpty }
        let stopped = try #require(workers.stops.last?.at)
        #expect(stopped < expires)
        // The store is back, with another replica asking too: one of them works again, never both.
        let b = Task { await FleetLease(leases: leases, holder: "b", ttl: ttl).run("sink", workers.work("b")) }
        leases.mode.withLock { $0 = .up }
        try await EventSinkTests.eventually { workers.working.count == 1 }
        #expect(workers.most == 1)
        for task in [a, b] { task.cancel() }
        for task in [a, b] { await task.value }
    }
}
