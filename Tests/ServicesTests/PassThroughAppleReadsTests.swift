import AppStoreDomain
import AppleFixtures
import Foundation
import GRPC
import GatewayFoundation
import Metrics
import NotificationStore
import Observability
import ProtoCodec
import ServiceHarness
import Simulator
import SubscriptionState
import Testing

@testable import Services

/// `AppleOperationHandler` with a feed, against a scripted Apple: only an answer verified in full is handed over.
@Suite(.serialized) struct AppleOperationFeedTests {
    @Test func onlyAnAnswerVerifiedInFullReachesTheState() async throws {
        let mint = try TransactionMint()
        let good = try mint.jws("2000000001", ["expiresDate": 4_000_000_000_000])
        let other = try mint.jws("2000000002", ["expiresDate": 4_000_000_000_000])
        let parts = other.split(separator: ".")
        let forged =
            parts[0] + "." + parts[1] + "." + String(parts[2].dropLast(4))
            + (parts[2].hasSuffix("AAAA") ? "BBBB" : "AAAA")
        let second = Lock(other)
        let fixture = try UpstreamFixture { _, _ in
            AppleJSON.response(["status": 0, "signedTransactions": [good, second.withLock { $0 }]])
        }
        let registry = MetricsRegistry()
        let store = MemorySubscriptionStore()
        let feed = AppleReadFeed(states: try AppleReadFeedTests().states(store: store, registry: registry))
        let handler = AppleOperationHandler(
            .lookUpOrderId, client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 1,
            feed: feed)
        let key = SubscriptionKey(bundleId: "com.example.app", environment: .production, originalTransactionId: "1000")

        second.withLock { $0 = forged }
        await #expect(throws: GatewayError.self) {
            _ = try await handler.handle(LookUpOrderIdRequest(orderId: "MTABC1"), remaining: .seconds(5))
        }
        await feed.settled()
        #expect(try await store.record(key) == nil)

        second.withLock { $0 = other }
        let response = try await handler.handle(LookUpOrderIdRequest(orderId: "MTABC2"), remaining: .seconds(5))
        #expect(response.transactions.count == 2)
        await feed.settled()
        let record = try #require(try await store.record(key))
        #expect(record.source == .appleRead && record.transactions.count == 2)
    }
}

/// The pass-through RPCs through the server's own call path (`ServiceHarness`, the simulator playing Apple): what
/// they verify for their callers reaches the subscription state, and nothing of it reaches the callers.
@Suite(.serialized) struct AppleReadFeedServiceTests {
    static let gateway = "/appstore.gateway.v1.AppStoreGateway/"
    static let state = "/appstore.gateway.v1.SubscriptionState/"

    /// A harness whose state counts in `registry`, its store wrapped by `subscriptions`.
    static func harness(
        _ registry: MetricsRegistry,
        subscriptions: (@Sendable (any SubscriptionStore) -> any SubscriptionStore)? = nil
    ) throws -> ServiceHarness {
        try ServiceHarness(subscriptions: subscriptions, stateMetrics: SubscriptionStateMetrics(registry: registry))
    }

    /// Active subscriptions of the simulator's production data: each original transaction id with its customer's
    /// transaction ids of that subscription, the latest purchase last.
    static func activeSubscriptions(_ harness: ServiceHarness) throws -> [(original: String, transactions: [String])] {
        let app = try #require(harness.simulator.state.apps.first)
        let dataset = try #require(
            harness.simulator.simulator.dataset(bundleId: app.bundleId, environment: .production))
        var found: [(String, [String])] = []
        for customer in dataset.customers {
            for renewal in customer.renewals where renewal.status == 1 {
                let periods = customer.transactions
                    .filter { $0.originalTransactionId == renewal.originalTransactionId && !$0.isRevoked }
                    .sorted { $0.purchaseDate < $1.purchaseDate }
                guard let last = periods.last, let expires = last.expiresDate,
                    expires > Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                else { continue }
                found.append((renewal.originalTransactionId, periods.map(\.transactionId)))
            }
        }
        return found
    }

    func call<Response: ProtoMessage>(
        _ harness: ServiceHarness, _ method: String, _ request: some ProtoMessage, as: Response.Type
    ) async throws -> Response {
        let outcome = await harness.call(method, request: request.serializedBytes())
        #expect(outcome.status.code == .ok, "\(method): \(outcome.status)")
        return try Response(serializedBytes: try #require(outcome.responses.first))
    }

    /// GetSubscription of `original`, with the number of Apple reads the state made before and after.
    func subscription(_ harness: ServiceHarness, _ original: String) async throws -> Subscription {
        var request = GetSubscriptionRequest()
        request.originalTransactionId = original
        request.environment = .production
        return try #require(
            try await call(harness, Self.state + "GetSubscription", request, as: GetSubscriptionResponse.self)
                .subscription)
    }

    static let appleReads = "appstore_gateway_state_apple_reads_total"

    /// `bytes`, the answer of `method`, without what the simulator signs anew for every call (the signed date of
    /// Get Transaction Info's and Get All Subscription Statuses' JWS, in the JWS, the decoded field and the raw
    /// JSON): two calls compare equal when all else is.
    static func unsigned(_ method: String, _ bytes: [UInt8]) throws -> [UInt8] {
        func clear(_ transaction: inout Transaction?) {
            transaction?.signedDate = nil
            transaction?.signedDateMillis = 0
            transaction?.rawJson = ""
        }
        switch method {
        case "GetTransactionInfo":
            var response = try GetTransactionInfoResponse(serializedBytes: bytes)
            response.signedTransactionInfo = ""
            clear(&response.transaction)
            return response.serializedBytes()
        case "GetAllSubscriptionStatuses":
            var response = try GetAllSubscriptionStatusesResponse(serializedBytes: bytes)
            for group in response.data.indices {
                for index in response.data[group].lastTransactions.indices {
                    response.data[group].lastTransactions[index].signedTransactionInfo = ""
                    response.data[group].lastTransactions[index].signedRenewalInfo = ""
                    clear(&response.data[group].lastTransactions[index].transaction)
                    response.data[group].lastTransactions[index].renewalInfo?.signedDate = nil
                    response.data[group].lastTransactions[index].renewalInfo?.signedDateMillis = 0
                    response.data[group].lastTransactions[index].renewalInfo?.rawJson = ""
                }
            }
            return response.serializedBytes()
        default:
            return bytes
        }
    }

    /// The state's Apple reads, every app together.
    func appleReads(_ registry: MetricsRegistry) -> Double {
        registry.render().split(separator: "\n").filter { $0.hasPrefix(Self.appleReads + "{") }
            .reduce(0) { $0 + (Double($1.split(separator: " ").last ?? "") ?? 0) }
    }

    /// GetTransactionInfo, GetAllSubscriptionStatuses and GetHistory each leave their subscription in the state as
    /// an Apple read; GetSubscription then answers it with no Apple read of its own; the callers' answers are what a
    /// gateway without a state answers.
    @Test func passThroughAnswersReachTheStateAndTheCallersAnswersAreUnchanged() async throws {
        let registry = MetricsRegistry()
        let harness = try Self.harness(registry)
        let stateless = try ServiceHarness(sharing: harness.simulator, keepsState: false)
        let feed = try #require(harness.service.appleReadFeed)
        #expect(stateless.service.appleReadFeed == nil)
        let active = try Self.activeSubscriptions(harness)
        try #require(active.count >= 3, "the simulator's seed has too few active subscriptions")

        var info = GetTransactionInfoRequest()
        info.transactionId = try #require(active[0].transactions.last)
        info.environment = .production
        var statuses = GetAllSubscriptionStatusesRequest()
        statuses.transactionId = active[1].original
        statuses.environment = .production
        var history = GetHistoryRequest()
        history.transactionId = active[2].original
        history.environment = .production
        history.allPages = true
        let calls: [(String, [UInt8])] = [
            ("GetTransactionInfo", info.serializedBytes()),
            ("GetAllSubscriptionStatuses", statuses.serializedBytes()),
            ("GetHistory", history.serializedBytes()),
        ]
        for ((name, request), subscription) in zip(calls, active) {
            let kept = await harness.call(Self.gateway + name, request: request)
            let plain = await stateless.call(Self.gateway + name, request: request)
            #expect(kept.status.code == .ok && plain.status.code == .ok, "\(name): \(kept.status) \(plain.status)")
            let answers = try [kept, plain].map { try Self.unsigned(name, try #require($0.responses.first)) }
            let same = answers[0] == answers[1]
            #expect(same, "\(name): the caller's answer changed")
            await feed.settled()
            let answer = try await self.subscription(harness, subscription.original)
            #expect(answer.source == .appleRead && answer.entitled && !answer.stale, "\(name)")
            #expect(answer.transaction?.transactionId == subscription.transactions.last, "\(name)")
        }
        #expect(appleReads(registry) == 0)
        #expect(metricValue(registry, #"appstore_gateway_state_pass_through_dropped_total{reason="backlog"}"#) == 0)
        // A subscription no pass-through call saw is read by the state itself: the metric counts it.
        try #require(active.count > 3)
        _ = try await subscription(harness, active[3].original)
        #expect(appleReads(registry) == 1)
    }

    /// A state whose store fails: the caller's answer is as always, and the loss is counted.
    @Test func aFailingStoreDoesNotFailTheCall() async throws {
        let registry = MetricsRegistry()
        let harness = try Self.harness(registry) { inner in
            HookedSubscriptionStore(inner) { () throws(NotificationStoreFailure) in
                throw NotificationStoreFailure("database is locked")
            }
        }
        let feed = try #require(harness.service.appleReadFeed)
        let active = try Self.activeSubscriptions(harness)
        var statuses = GetAllSubscriptionStatusesRequest()
        statuses.transactionId = try #require(active.first).original
        statuses.environment = .production
        let response = try await call(
            harness, Self.gateway + "GetAllSubscriptionStatuses", statuses,
            as: GetAllSubscriptionStatusesResponse.self)
        #expect(!response.data.isEmpty)
        await feed.settled()
        #expect(metricValue(registry, #"appstore_gateway_state_pass_through_dropped_total{reason="store"}"#) >= 1)
    }
}
