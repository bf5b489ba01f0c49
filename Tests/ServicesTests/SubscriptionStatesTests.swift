import AppStoreDomain
import AppleFixtures
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState
import Testing

@testable import Services

/// The reads of the subscription state without sockets: a memory store, a manual clock and Apple's Get All
/// Subscription Statuses as an injected function that counts its calls.
@Suite struct SubscriptionStatesTests {
    static let bundle = "com.example.app"
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_750_000_000_000
    let app = App(
        name: "example", bundleId: bundle, appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ", privateKeyFile: "k",
        environment: .sandbox)

    /// Counts the calls made to "Apple" (and who each ran as) and answers with `answer`.
    final class FakeApple: Sendable {
        let calls = Lock(0)
        let callers = Lock<[CallerIdentity?]>([])
        let answer:
            @Sendable (GetAllSubscriptionStatusesRequest) throws(GatewayError) -> GetAllSubscriptionStatusesResponse
        init(
            _ answer:
                @escaping @Sendable (GetAllSubscriptionStatusesRequest) throws(GatewayError)
                -> GetAllSubscriptionStatusesResponse
        ) { self.answer = answer }
    }

    /// A memory store that keeps the size of every batch applied (each one commit).
    final class CommitCountingStore: SubscriptionStore {
        let held = MemorySubscriptionStore()
        let commits = Lock<[Int]>([])

        func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
            async throws(NotificationStoreFailure) -> [AppliedChange]
        {
            commits.withLock { $0.append(changes.count) }
            return try await held.apply(changes, projectedThrough: position)
        }
        func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
            try await held.record(key)
        }
        func customer(bundleId: String, environment: Environment, appAccountToken: String)
            async throws(NotificationStoreFailure) -> CustomerView
        {
            try await held.customer(bundleId: bundleId, environment: environment, appAccountToken: appAccountToken)
        }
        func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView {
            try await held.customer(key)
        }
        func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition {
            try await held.projectedThrough()
        }
        func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure) {
            try await held.setProjectedThrough(position)
        }
        func removeAll() async throws(NotificationStoreFailure) { try await held.removeAll() }
        func advance(_ key: SubscriptionKey, context: SubscriptionEventContext, nowMillis: Int64)
            async throws(NotificationStoreFailure) -> [SubscriptionEvent]
        {
            try await held.advance(key, context: context, nowMillis: nowMillis)
        }
        func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
            async throws(NotificationStoreFailure) -> [SubscriptionKey]
        {
            try await held.dueTransitions(through: nowMillis, bundleIds: bundleIds, limit: limit)
        }
        func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64? {
            try await held.nextTransition(bundleIds: bundleIds)
        }
        func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
            -> [SubscriptionKey]
        {
            try await held.recordKeys(after: key, limit: limit)
        }
        func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure)
            -> [StoredPurchase]
        {
            try await held.purchases(after: key, limit: limit)
        }
        func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
            -> [StoredSubscriptionEvent]
        {
            try await held.events(after: position, bundleId: bundleId, limit: limit)
        }
        func lastEventPosition() async throws(NotificationStoreFailure) -> Int64 { try await held.lastEventPosition() }
        func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int {
            try await held.pruneEvents(occurredBefore: millis)
        }
        func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64 {
            try await held.eventsPrunedThrough()
        }
        var eventSignal: LiveSignal { held.eventSignal }
    }

    func states(
        _ apple: FakeApple, clock: ManualClock, store: any SubscriptionStore = MemorySubscriptionStore(),
        appleReadWeight: Int = 1, metrics: SubscriptionStateMetrics = SubscriptionStateMetrics(registry: nil)
    ) throws -> SubscriptionStates {
        let pki = try AppStoreTestPKI(referenceTime: Date())
        return SubscriptionStates(
            store: store, apps: AppDirectory([app]), policies: [:],
            verifier: try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate])),
            clock: clock, metrics: metrics, appleReadWeight: appleReadWeight
        ) { request, _ throws(GatewayError) in
            apple.calls.withLock { $0 += 1 }
            apple.callers.withLock { $0.append(CallerIdentity.current) }
            try? await Task.sleep(for: .milliseconds(20))
            return try apple.answer(request)
        }
    }

    static func transaction(_ original: String, purchased: Int64, expires: Int64, signed: Int64) -> SignedTransaction {
        var payload = Transaction()
        payload.transactionId = original
        payload.originalTransactionId = original
        payload.bundleId = bundle
        payload.productId = "com.example.app.premium.monthly"
        payload.subscriptionGroupIdentifier = "g"
        payload.type = .autoRenewable
        payload.environment = .sandbox
        payload.purchaseDateMillis = purchased
        payload.expiresDateMillis = expires
        payload.signedDateMillis = signed
        payload.purchaseDate = ProtoTimestamp(unixMilliseconds: purchased)
        payload.expiresDate = ProtoTimestamp(unixMilliseconds: expires)
        payload.signedDate = ProtoTimestamp(unixMilliseconds: signed)
        return SignedTransaction(jws: "eyJ.\(original)-\(signed).sig", payload: payload)
    }

    static func renewal(_ original: String, signed: Int64) -> SignedRenewalInfo {
        var payload = RenewalInfo()
        payload.originalTransactionId = original
        payload.productId = "com.example.app.premium.monthly"
        payload.autoRenewProductId = payload.productId
        payload.autoRenewStatus = .on
        payload.environment = .sandbox
        payload.signedDateMillis = signed
        payload.signedDate = ProtoTimestamp(unixMilliseconds: signed)
        return SignedRenewalInfo(jws: "eyJ.rn-\(original)-\(signed).sig", payload: payload)
    }

    static func answer(_ original: String, _ transaction: SignedTransaction, _ renewal: SignedRenewalInfo)
        -> GetAllSubscriptionStatusesResponse
    {
        var last = LastTransaction()
        last.originalTransactionId = original
        last.signedTransactionInfo = transaction.jws
        last.transaction = transaction.payload
        last.signedRenewalInfo = renewal.jws
        last.renewalInfo = renewal.payload
        var group = SubscriptionGroupStatus()
        group.lastTransactions = [last]
        var response = GetAllSubscriptionStatusesResponse()
        response.data = [group]
        return response
    }

    /// An id never seen is asked of Apple once, however many callers ask at the same time; then it is kept.
    @Test func anUnknownIdIsReadFromAppleOnceForConcurrentCallers() async throws {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: Self.t0))
        let transaction = Self.transaction(
            "1001", purchased: Self.t0 - Self.day, expires: Self.t0 + 29 * Self.day,
            signed: Self.t0 - Self.day)
        let apple = FakeApple { _ throws(GatewayError) in
            Self.answer("1001", transaction, Self.renewal("1001", signed: Self.t0 - Self.day))
        }
        let states = try states(apple, clock: clock)
        let app = app
        let statuses = try await withThrowingTaskGroup(of: SubscriptionStatus.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await states.subscription(
                        app: app, originalTransactionId: "1001", environment: .sandbox, remaining: nil
                    ).status
                }
            }
            return try await group.reduce(into: [SubscriptionStatus]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: .active, count: 10))
        #expect(apple.calls.withLock { $0 } == 1)
        let again = try await states.subscription(
            app: app, originalTransactionId: "1001", environment: .sandbox, remaining: nil)
        #expect(again.source == .appleRead && !again.stale)
        #expect(apple.calls.withLock { $0 } == 1)
    }

    /// Past its expiry with auto-renew on and nothing newer: Apple is asked; when it cannot answer, the state
    /// is answered as it is, `stale`; when it answers, the renewal it reports is the state.
    @Test func aPossiblyMissedRenewalIsConfirmedOrAnsweredStale() async throws {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: Self.t0))
        let first = Self.transaction("2001", purchased: Self.t0, expires: Self.t0 + 30 * Self.day, signed: Self.t0)
        let renewed = Self.transaction(
            "2002", purchased: Self.t0 + 30 * Self.day, expires: Self.t0 + 60 * Self.day,
            signed: Self.t0 + 30 * Self.day)
        var renewedPayload = renewed.payload
        renewedPayload.originalTransactionId = "2001"
        let renewal = SignedTransaction(jws: renewed.jws, payload: renewedPayload)
        let reachable = Lock(false)
        let apple = FakeApple { _ throws(GatewayError) in
            guard reachable.withLock({ $0 }) else {
                throw GatewayError.deadlineExceeded(whileDoing: "waiting for Apple")
            }
            return Self.answer("2001", renewal, Self.renewal("2001", signed: Self.t0 + 30 * Self.day))
        }
        let states = try states(apple, clock: clock)
        _ = try await states.apply(
            transaction: first, renewal: Self.renewal("2001", signed: Self.t0), source: .notification, app: app,
            cause: "test")
        clock.advance(by: .seconds(31 * 86_400))
        let stale = try await states.subscription(
            app: app, originalTransactionId: "2001", environment: .sandbox, remaining: nil)
        #expect(stale.stale && stale.status == .expired && !stale.entitled)
        reachable.withLock { $0 = true }
        let confirmed = try await states.subscription(
            app: app, originalTransactionId: "2001", environment: .sandbox, remaining: nil)
        #expect(!confirmed.stale && confirmed.status == .active && confirmed.entitled)
        #expect(confirmed.transaction?.transactionId == "2002")
        #expect(apple.calls.withLock { $0 } == 2)
    }

    /// The state's own reads of Apple (a first read, a confirmation) spend the state's share of the app's budget,
    /// as the listed caller `appstore-gateway/subscription-state` of the configured weight, whoever's call needed
    /// them; a caller's explicit refresh spends the caller's own.
    @Test func theStatesOwnReadsRunAsTheStateNotAsTheCaller() async throws {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: Self.t0))
        let transaction = Self.transaction(
            "3001", purchased: Self.t0, expires: Self.t0 + 30 * Self.day, signed: Self.t0)
        let apple = FakeApple { _ throws(GatewayError) in
            Self.answer("3001", transaction, Self.renewal("3001", signed: Self.t0))
        }
        let states = try states(apple, clock: clock, appleReadWeight: 7)
        let app = app
        let caller = CallerIdentity(name: .subject("team-a"), weight: 2, listed: true)
        // A first read, made while serving team-a's call.
        _ = try await CallerIdentity.$current.withValue(caller) {
            try await states.subscription(
                app: app, originalTransactionId: "3001", environment: .sandbox, remaining: nil)
        }
        // A confirmation (past the expiry with auto-renew on), again while serving team-a.
        clock.advance(by: .seconds(31 * 86_400))
        _ = try await CallerIdentity.$current.withValue(caller) {
            try await states.subscription(
                app: app, originalTransactionId: "3001", environment: .sandbox, remaining: nil)
        }
        // team-a's own refresh.
        _ = try await CallerIdentity.$current.withValue(caller) {
            try await states.readFromApple(
                app: app, originalTransactionId: "3001", environment: .sandbox, remaining: nil, forCaller: true)
        }
        let callers = apple.callers.withLock { $0 }
        #expect(callers.count == 3)
        for own in callers.prefix(2) {
            #expect(own?.identity == "appstore-gateway/subscription-state")
            #expect(own?.weight == 7 && own?.listed == true)
        }
        #expect(callers.last??.identity == "team-a")
    }

    /// Every subscription of Apple's answer (several groups, several each) is applied in one commit.
    @Test func anAppleAnswerIsOneCommit() async throws {
        let clock = ManualClock(wall: WallTime(millisecondsSince1970: Self.t0))
        let signed = Self.t0 - Self.day
        func last(_ original: String) -> LastTransaction {
            let transaction = Self.transaction(
                original, purchased: signed, expires: Self.t0 + 29 * Self.day, signed: signed)
            return Self.answer(original, transaction, Self.renewal(original, signed: signed)).data[0]
                .lastTransactions[0]
        }
        var first = SubscriptionGroupStatus()
        first.lastTransactions = [last("4001"), last("4002")]
        var second = SubscriptionGroupStatus()
        second.lastTransactions = [last("4003")]
        var response = GetAllSubscriptionStatusesResponse()
        response.data = [first, second]
        let apple = FakeApple { [response] _ throws(GatewayError) in response }
        let store = CommitCountingStore()
        let states = try states(apple, clock: clock, store: store)
        let asked = try await states.subscription(
            app: app, originalTransactionId: "4002", environment: .sandbox, remaining: nil)
        #expect(asked.originalTransactionId == "4002" && asked.status == .active)
        #expect(store.commits.withLock { $0 } == [3])
        for original in ["4001", "4002", "4003"] {
            let key = SubscriptionKey(bundleId: Self.bundle, environment: .sandbox, originalTransactionId: original)
            #expect(try await store.record(key)?.source == .appleRead)
        }
    }

    /// Apple's answer without the id asked for: NOT_FOUND, nothing kept.
    @Test func anIdAppleDoesNotHoldIsNotFound() async throws {
        let apple = FakeApple { _ throws(GatewayError) in GetAllSubscriptionStatusesResponse() }
        let states = try states(apple, clock: ManualClock())
        await #expect(throws: GatewayError.subscriptionNotFound(originalTransactionId: "3001")) {
            try await states.subscription(
                app: app, originalTransactionId: "3001", environment: .sandbox, remaining: nil)
        }
    }
}

extension SubscriptionStates {
    /// GetSubscription's answer (`framedSubscription`) as the caller reads it: the message it decodes to.
    func subscription(
        app: App, originalTransactionId: String, environment: Environment, remaining: Duration?
    ) async throws -> Subscription {
        try Self.sent(
            try await framedSubscription(
                app: app, originalTransactionId: originalTransactionId, environment: environment, remaining: remaining))
    }

    /// The answer GetSubscription sends, decoded.
    static func sent(_ framed: FramedMessage) throws -> Subscription {
        try GetSubscriptionResponse(serializedBytes: Array(framed.payload)).subscription ?? Subscription()
    }
}
