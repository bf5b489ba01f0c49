import AppStoreDomain
import AppleFixtures
import Configuration
import Cryptography
import EventLoops
import Foundation
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState
import TestSupport
import Testing

@testable import Services

/// The gateway's fleet work on two replicas sharing one store: a sink's events delivered once (not once per
/// replica) and taken over by the other replica where the first stopped; the reconciler and the subscription
/// timer run by one replica only.
@Suite struct FleetWorkTests {
    typealias T = SubscriptionStatesTests

    /// Where the replicas keep their sinks' progress and leases: the memory store with shared leases, or one
    /// PostgreSQL database each replica opens on its own loop.
    enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory
        case postgres

        var testDescription: String { rawValue }

        static var available: [Backend] { allCases.filter { $0 != .postgres || PostgresProcess.available } }
    }

    @Test(arguments: Backend.available)
    func twoReplicasDeliverEachEventOnceAndTheSecondTakesOverWhereTheFirstStopped(_ backend: Backend) async throws {
        let replicas = try await Replicas(backend, count: 2)
        let log = EventSinkTests.Log()
        // Each replica's own HTTP client, to the same team endpoint.
        let endpoints = (0..<2).map { _ in EventSinkTests.Endpoint { _, _ in .answered(status: 204) } }
        let ttl: Duration = .milliseconds(900)
        let running = (0..<2).map { index in
            let sink = EventSinkTests.sink(log, endpoints[index], store: replicas.sinks[index])
            let fleet = FleetLease(leases: replicas.leases[index], holder: "replica \(index)", ttl: ttl)
            return Task { await sink.run(fleet: fleet) }
        }
        func delivered() -> [String] { endpoints.flatMap { $0.requests.withLock { $0.map(\.id) } } }
        log.append("a", 20)
        log.append("b", 20)
        try await EventSinkTests.eventually { Set(delivered()).count == 40 }
        try await EventSinkTests.eventually {
            try await replicas.sinks[0].openSink(EventSinkTests.id, startingAfter: 0, nowMillis: 0).through == 40
        }
        // One replica delivered everything, each event once.
        let holder = try #require(endpoints.firstIndex { !$0.requests.withLock(\.isEmpty) })
        let otherIdle = endpoints[1 - holder].requests.withLock(\.isEmpty)
        #expect(otherIdle)
        #expect(delivered().count == 40)
        // The holder stops; the other replica takes the sink over and delivers what follows, from the progress
        // the first recorded: nothing again.
        running[holder].cancel()
        await running[holder].value
        log.append("a", 20)
        try await EventSinkTests.eventually { Set(delivered()).count == 60 }
        try await Task.sleep(for: .milliseconds(200))
        let takenOver = endpoints[1 - holder].requests.withLock { $0.map(\.id) }
        #expect(takenOver == (21...40).map { "a:\($0)" })
        #expect(delivered().count == 60)
        running[1 - holder].cancel()
        await running[1 - holder].value
        await replicas.close()
    }

    @Test func theReconcilerRunsOnOneReplicaAndMovesWhenItStops() async throws {
        let pki = try AppStoreTestPKI(referenceTime: Date())
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
        let directory = NSTemporaryDirectory() + "fleet-reconciler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The replicas' notification store (shared), each replica with its own Apple client.
        let store = try SQLiteNotificationStore(path: directory + "/n.db")
        let apple = try (0..<2).map { _ in try UpstreamFixture() }
        let leases = FleetLeaseTests.TableLeases()
        let running = try apple.enumerated().map { index, fixture in
            let service = AppStoreGatewayService(
                configuration: fixture.configuration, verifier: verifier, client: fixture.client,
                resumeTokenKeys: .random(),
                live: LiveNotificationFeed(store: store, metrics: NotificationMetrics(registry: nil)))
            let reconciler = try #require(service.reconciler)
            let fleet = FleetLease(leases: leases, holder: "replica \(index)", ttl: .milliseconds(600))
            return Task {
                await reconciler.run(.init(reconcileInterval: .milliseconds(50)), fleet: fleet)
            }
        }
        try await EventSinkTests.eventually { apple.contains { !$0.fake.requests.isEmpty } }
        try await Task.sleep(for: .milliseconds(300))
        let holder = try #require(apple.firstIndex { !$0.fake.requests.isEmpty })
        #expect(apple[1 - holder].fake.requests.isEmpty)
        #expect(apple[holder].fake.requests.count > 1)
        running[holder].cancel()
        await running[holder].value
        try await EventSinkTests.eventually { !apple[1 - holder].fake.requests.isEmpty }
        running[1 - holder].cancel()
        await running[1 - holder].value
    }

    @Test func theSubscriptionTimerAsksAppleAndMakesTheEventOnOneReplicaOnly() async throws {
        let harness = SubscriptionStatesTests()
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: T.t0))
        var renewedPayload = T.transaction(
            "3002", purchased: T.t0 + 30 * T.day, expires: T.t0 + 60 * T.day, signed: T.t0 + 30 * T.day
        ).payload
        renewedPayload.originalTransactionId = "3001"
        let renewed = SignedTransaction(jws: "eyJ.3002.sig", payload: renewedPayload)
        let apple = (0..<2).map { _ in
            T.FakeApple { _ throws(GatewayError) in
                T.answer("3001", renewed, T.renewal("3001", signed: T.t0 + 30 * T.day))
            }
        }
        // Two replicas' states on one store; a subscription renewing at the end of its period, which has come.
        let shared = MemorySubscriptionStore()
        let states = try apple.map { try harness.states($0, clock: clock, store: shared) }
        var renewal = T.renewal("3001", signed: T.t0)
        renewal.payload.autoRenewStatus = .on
        _ = try await states[0].apply(
            transaction: T.transaction("3001", purchased: T.t0, expires: T.t0 + 30 * T.day, signed: T.t0),
            renewal: renewal, source: .notification, app: harness.app, cause: "n-1")
        clock.advance(by: .seconds(30 * 86_400))
        let leases = FleetLeaseTests.TableLeases()
        let running = states.enumerated().map { index, states in
            // A retention longer than the month that passed: the first event stays.
            let timer = SubscriptionTimer(states: states, retention: .seconds(365 * 86_400))
            let fleet = FleetLease(leases: leases, holder: "replica \(index)", ttl: .milliseconds(600))
            return Task { await timer.run(fleet: fleet) }
        }
        try await EventSinkTests.eventually {
            try await shared.events(after: 0, bundleId: nil, limit: 10).count == 2
        }
        try await Task.sleep(for: .milliseconds(200))
        for task in running { task.cancel() }
        for task in running { await task.value }
        #expect(
            try await shared.events(after: 0, bundleId: nil, limit: 10).map(\.event.type) == [
                .initialPurchase, .renewal,
            ])
        #expect(apple.map { $0.calls.withLock { $0 } }.sorted() == [0, 1])
    }
}

/// Replicas of one gateway for a test: each one's sink store and leases, on the backend's shared store.
struct Replicas: Sendable {
    let sinks: [any EventSinkStore]
    let leases: [any FleetLeases]
    private let databases: [(database: PostgresDatabase, loop: EventLoop, thread: LoopThread)]

    init(_ backend: FleetWorkTests.Backend, count: Int) async throws {
        switch backend {
        case .memory:
            let store = MemoryEventSinkStore()
            let leases = FleetLeaseTests.TableLeases()
            sinks = Array(repeating: store, count: count)
            self.leases = Array(repeating: leases, count: count)
            databases = []
        case .postgres:
            // A database of its own on the shared server; each replica opens it on its own loop with a pool of one
            // (the test server takes 40 connections for every test running at once).
            let uri = try await PostgresProcess.shared().makeDatabase()
            var opened: [(database: PostgresDatabase, loop: EventLoop, thread: LoopThread)] = []
            for _ in 0..<count {
                let loop = try EventLoop(index: 0)
                let thread = spawnThread(name: "replica-store-loop") { loop.run() }
                var settings = PostgresDatabase.Settings(uri: uri)
                settings.poolSize = 1
                opened.append((try await PostgresDatabase.open(settings, on: loop), loop, thread))
            }
            sinks = opened.map { PostgresEventSinkStore($0.database) }
            leases = opened.map { PostgresFleetLeases($0.database) }
            databases = opened
        }
    }

    func close() async {
        for (database, loop, thread) in databases {
            await database.close()
            loop.stop()
            thread.join()
        }
    }
}
