import NotificationStore
import TestSupport
import Testing

/// The leases of one replica: every holder is granted every lease, at once.
@Suite struct FleetLeasesTests {
    @Test func theSoleReplicaIsGrantedEveryLease() async throws {
        let leases = SoleReplicaLeases()
        #expect(!leases.isShared)
        #expect(try await leases.hold("subscription-timer", holder: "a", for: .seconds(30)))
        #expect(try await leases.hold("subscription-timer", holder: "b", for: .seconds(30)))
        try await leases.release("subscription-timer", holder: "a")
        #expect(try await leases.hold("subscription-timer", holder: "a", for: .seconds(30)))
    }

    @Test func holderNamesDifferFromOneCallToTheNext() {
        let (first, second) = (FleetLeaseHolder.unique(), FleetLeaseHolder.unique())
        #expect(first != second)
        #expect(first.split(separator: "/").count == 3)
    }
}

/// The fleet's leases in PostgreSQL, asked for by replicas on databases (pools, loops) of their own: one holder at
/// a time, kept by renewing, taken over once it is not renewed within its ttl, freed at once by a release.
@Suite(.enabled(if: PostgresProcess.available, "PostgreSQL is not installed"))
struct PostgresFleetLeasesTests {
    @Test func oneHolderAtATimeKeepsItByRenewingAndLosesItToAnotherWhenItStops() async throws {
        let databases = try await TestDatabases()
        let a = PostgresFleetLeases(try await databases.open())
        let b = PostgresFleetLeases(try await databases.open())
        #expect(a.isShared)
        let ttl: Duration = .milliseconds(1_500)
        #expect(try await a.hold("subscription-timer", holder: "a", for: ttl))
        #expect(!(try await b.hold("subscription-timer", holder: "b", for: ttl)))
        // Another lease has its own holder.
        #expect(try await b.hold("sink team", holder: "b", for: ttl))
        // Renewed every ttl / 5, the lease stays with its holder well past its first ttl.
        let renewing = ContinuousClock.now
        while ContinuousClock.now < renewing + ttl * 2 {
            #expect(try await a.hold("subscription-timer", holder: "a", for: ttl))
            #expect(!(try await b.hold("subscription-timer", holder: "b", for: ttl)))
            try await Task.sleep(for: ttl / 5)
        }
        // The holder stops renewing (a crash): the other replica gets the lease once its ttl has passed.
        #expect(try await a.hold("subscription-timer", holder: "a", for: ttl))
        let stopped = ContinuousClock.now
        var tookOver: ContinuousClock.Instant?
        while tookOver == nil, ContinuousClock.now < stopped + ttl * 4 {
            if try await b.hold("subscription-timer", holder: "b", for: ttl) {
                tookOver = .now
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let at = try #require(tookOver)
        #expect(at - stopped >= ttl - .milliseconds(100))
        // The old holder comes back: refused.
        #expect(!(try await a.hold("subscription-timer", holder: "a", for: ttl)))
        await databases.close()
    }

    @Test func aReleasedLeaseIsFreeAtOnceAndOnlyItsHolderReleasesIt() async throws {
        let databases = try await TestDatabases()
        let a = PostgresFleetLeases(try await databases.open())
        let b = PostgresFleetLeases(try await databases.open())
        #expect(try await a.hold("notification-reconciler", holder: "a", for: .seconds(60)))
        try await b.release("notification-reconciler", holder: "b")
        #expect(!(try await b.hold("notification-reconciler", holder: "b", for: .seconds(60))))
        try await a.release("notification-reconciler", holder: "a")
        #expect(try await b.hold("notification-reconciler", holder: "b", for: .seconds(60)))
        await databases.close()
    }

    @Test func replicasAskingAllAtOnceGetOneHolderPerLease() async throws {
        let databases = try await TestDatabases()
        var replicas: [PostgresFleetLeases] = []
        for _ in 0..<3 { replicas.append(PostgresFleetLeases(try await databases.open())) }
        let names = (0..<5).map { "sink \($0)" }
        // Four holders on each of three replicas ask for every lease at once.
        let granted = try await withThrowingTaskGroup(of: (String, String)?.self) { group in
            for (index, leases) in replicas.enumerated() {
                for holder in 0..<4 {
                    for name in names {
                        group.addTask {
                            let holder = "replica \(index) holder \(holder)"
                            return try await leases.hold(name, holder: holder, for: .seconds(60)) ? (name, holder) : nil
                        }
                    }
                }
            }
            var granted: [String: [String]] = [:]
            for try await case let (name, holder)? in group { granted[name, default: []].append(holder) }
            return granted
        }
        #expect(granted.keys.sorted() == names)
        #expect(granted.values.allSatisfy { $0.count == 1 })
        await databases.close()
    }
}
