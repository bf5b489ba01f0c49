import AppStoreClient
import AppStoreDomain
import GRPC
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// The gateway's own subscription state: every input goes through one reducer (`SubscriptionRecord.apply`, inside
/// the store's transaction), every answer is derived from the stored record at the instant of the read
/// (`SubscriptionRecord.state(at:policy:)`), and Apple is asked only when the state cannot be known without it:
/// an id never seen (once, however many callers ask at the same time), a record past its expiry that may have
/// renewed unseen, or a caller's explicit refresh.
final class SubscriptionStates: Sendable {
    /// What the state's reads of Apple need: Get All Subscription Statuses, verified and decoded.
    typealias StatusReader =
        @Sendable (GetAllSubscriptionStatusesRequest, Duration?) async throws(GatewayError)
        -> GetAllSubscriptionStatusesResponse

    /// The longest an answer waits for Apple's confirmation of a record past its expiry before it is answered
    /// with `stale` set.
    static let confirmationWait: Duration = .seconds(2)

    let store: any SubscriptionStore
    let apps: AppDirectory
    let verifier: SignedDataVerifier
    let clock: any GatewayClock
    let metrics: SubscriptionStateMetrics
    private let policies: [String: SubscriptionPolicy]
    private let readStatuses: StatusReader
    private let reads = SingleFlight<ReadKey, GetAllSubscriptionStatusesResponse>()
    /// The records read last, used again while the store says they are unchanged (`RecordCache`).
    let records: RecordCache
    /// Who the state's own reads of Apple run as (`CallerIdentity.current` while they run): the confirmations,
    /// the first read of an id never seen, the timer's. A listed caller of weight `subscriptions.appleReadWeight`,
    /// so when callers compete for an app's budget the state still gets its share, and takes no more.
    let ownReads: CallerIdentity

    /// The identity the state's own reads of Apple are counted under (fair-share metrics, logs).
    static let ownReadsIdentity = "appstore-gateway/subscription-state"

    private struct ReadKey: Hashable, Sendable {
        var app: String
        var originalTransactionId: String
        var environment: Environment
    }

    init(
        store: any SubscriptionStore, apps: AppDirectory, policies: [String: SubscriptionPolicy],
        verifier: SignedDataVerifier, clock: any GatewayClock, metrics: SubscriptionStateMetrics,
        appleReadWeight: Int = 1, recordCacheSize: Int = RecordCache.defaultCapacity,
        readStatuses: @escaping StatusReader
    ) {
        self.records = RecordCache(capacity: recordCacheSize)
        self.ownReads = CallerIdentity(
            name: .subject(Self.ownReadsIdentity), identity: Self.ownReadsIdentity, weight: max(1, appleReadWeight),
            listed: true)
        self.store = store
        self.apps = apps
        self.policies = policies
        self.verifier = verifier
        self.clock = clock
        self.metrics = metrics
        self.readStatuses = readStatuses
    }

    /// The policy of `app` (its entitlements and the refund policy).
    func policy(of app: App) -> SubscriptionPolicy { policies[app.name] ?? .defaults }

    var nowMillis: Int64 { clock.wallNow().millisecondsSince1970 }

    /// What events of the configured app with `bundleId` are made under; nil when no app has it.
    func eventContext(bundleId: String, cause: String) -> SubscriptionEventContext? {
        guard let app = apps.app(bundleId: bundleId) else { return nil }
        return SubscriptionEventContext(app: app.name, policy: policy(of: app), cause: cause)
    }

    // MARK: - Reads

    /// GetSubscription's answer, framed. A record never seen is read from Apple once (shared by concurrent
    /// callers) and stored; a record that needs Apple's confirmation is confirmed within `confirmationWait`, else
    /// answered `stale`. An answer made from a stored record is kept (`RecordCache.KeptAnswer`) and sent again
    /// while the store says the record is unchanged and the clock, read after the store answered, is still in the
    /// span over which the record's state is what the answer says. An answer that needed Apple, or is `stale`,
    /// is not kept.
    func framedSubscription(
        app: App, originalTransactionId: String, environment: Environment, remaining: Duration?
    ) async throws(GatewayError) -> FramedMessage {
        for candidate in Self.environments(environment, of: app) {
            let key = SubscriptionKey(
                bundleId: app.bundleId, environment: candidate, originalTransactionId: originalTransactionId)
            let kept = records.entry(key)
            let keptAnswer = kept?.answer.flatMap { $0.holds(app: app.name, at: nowMillis) ? $0 : nil }
            var read = try await currentRecord(
                key, unlessStamped: keptAnswer != nil || kept?.record != nil ? kept?.stamp : nil)
            // The instant of the answer: after the store answered (the read may have waited).
            let now = nowMillis
            var outcome = SubscriptionStateMetrics.CacheOutcome.storeRead
            if case .unchanged = read {
                if let keptAnswer, keptAnswer.holds(app: app.name, at: now) {
                    metrics.served(.keptAnswer)
                    return keptAnswer.framed
                }
                if let kept, let record = kept.record {
                    read = .record(record, kept.stamp)
                    outcome = .keptRecord
                } else {
                    // The kept answer's state moved while the store was asked: the record, read again.
                    read = try await currentRecord(key, unlessStamped: nil)
                }
            }
            guard case .record(let record, let stamp) = read else {
                records.forget(key)
                continue
            }
            metrics.served(outcome)
            let policy = policy(of: app)
            let state = record.state(at: now, policy: policy)
            guard !state.needsConfirmation else {
                records.keep(record, stamp: stamp, for: key)
                return Self.framed(try await answer(record, app: app, remaining: remaining))
            }
            let framed = Self.framed(Subscription(record, app: app.name, state: state, stale: false))
            let answer = RecordCache.KeptAnswer(
                app: app.name, fromMillis: now, untilMillis: record.nextTransitionMillis(at: now, policy: policy),
                framed: framed)
            records.keep(answer: answer, stamp: stamp, for: key)
            return framed
        }
        return Self.framed(
            try await firstRead(
                app: app, originalTransactionId: originalTransactionId, environment: environment,
                remaining: remaining))
    }

    /// The store's stamped read of `key`; a store failure is UNAVAILABLE.
    private func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?) async throws(GatewayError)
        -> CurrentRead
    {
        do {
            return try await store.currentRecord(key, unlessStamped: stamp)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
    }

    /// GetSubscription's response holding `subscription`, framed.
    static func framed(_ subscription: Subscription) -> FramedMessage {
        var response = GetSubscriptionResponse()
        response.subscription = subscription
        return FramedMessage(response)
    }

    /// A subscription the state has never seen: Apple's answer is the state (NOT_FOUND when Apple has none).
    private func firstRead(
        app: App, originalTransactionId: String, environment: Environment, remaining: Duration?
    ) async throws(GatewayError) -> Subscription {
        let read = try await readFromApple(
            app: app, originalTransactionId: originalTransactionId, environment: environment, remaining: remaining)
        guard let record = read else {
            throw GatewayError.subscriptionNotFound(originalTransactionId: originalTransactionId)
        }
        return subscriptionMessage(record, app: app, stale: false)
    }

    /// The stored record answered: confirmed with Apple first when it needs it (single-flight, bounded wait).
    /// Its state is derived once, at the read's instant, and is the answer unless Apple's confirmation replaces it.
    private func answer(_ record: SubscriptionRecord, app: App, remaining: Duration?) async throws(GatewayError)
        -> Subscription
    {
        let state = record.state(at: nowMillis, policy: policy(of: app))
        guard state.needsConfirmation else { return Subscription(record, app: app.name, state: state, stale: false) }
        let wait = remaining.map { min($0, Self.confirmationWait) } ?? Self.confirmationWait
        do {
            if let confirmed = try await readFromApple(
                app: app, originalTransactionId: record.key.originalTransactionId,
                environment: record.key.environment, remaining: wait)
            {
                return subscriptionMessage(confirmed, app: app, stale: false)
            }
        } catch .cancelled {
            throw .cancelled
        } catch {
            // No budget, Apple unreachable or slow, or an answer without it: what the state holds, marked stale.
            metrics.staleAnswer(app: app.name)
        }
        return Subscription(record, app: app.name, state: state, stale: true)
    }

    /// The stored record of `key` with its current transaction only (`SubscriptionStore.currentRecord`: what its
    /// state and its answer need): the one `records` keeps when the store says it is unchanged, else read and kept
    /// (with `remember`; a walk over every record, the export's, passes false so it does not churn the cache). An
    /// answer kept for the key in place of its record (`framedSubscription`) stays while the record read has its
    /// stamp. A store failure is UNAVAILABLE.
    func storedRecord(_ key: SubscriptionKey, remember: Bool = true) async throws(GatewayError) -> SubscriptionRecord? {
        let kept = records.entry(key)
        var read = try await currentRecord(key, unlessStamped: kept?.record == nil ? nil : kept?.stamp)
        if case .unchanged = read {
            if let record = kept?.record { return record }
            read = try await currentRecord(key, unlessStamped: nil)  // no stamp was asked about: not reached
        }
        guard case .record(let record, let stamp) = read else {
            records.forget(key)
            return nil
        }
        if let kept, kept.answer != nil, kept.stamp == stamp { return record }
        if remember || kept != nil { records.keep(record, stamp: stamp, for: key) }
        return record
    }

    /// Reads the subscription from Apple now (Get All Subscription Statuses; identical concurrent reads share one
    /// call), applies every subscription of the answer in one commit, and returns the record asked for (nil when
    /// Apple's answer does not hold it). The read spends the state's own share of the app's budget (`ownReads`),
    /// or with `forCaller` the share of the caller the task serves (`RefreshSubscription`).
    func readFromApple(
        app: App, originalTransactionId: String, environment: Environment, remaining: Duration?,
        forCaller: Bool = false
    ) async throws(GatewayError) -> SubscriptionRecord? {
        var request = GetAllSubscriptionStatusesRequest()
        request.app = app.name
        request.transactionId = originalTransactionId
        request.environment = environment
        let key = ReadKey(app: app.name, originalTransactionId: originalTransactionId, environment: environment)
        let reader = readStatuses
        let caller = forCaller ? CallerIdentity.current : ownReads
        let outcome = await reads.run(key: key) {
            () async -> Result<GetAllSubscriptionStatusesResponse, GatewayError> in
            await CallerIdentity.$current.withValue(caller) {
                do throws(GatewayError) {
                    return .success(try await reader(request, remaining))
                } catch {
                    return .failure(error)
                }
            }
        }
        let response = try outcome.get()
        metrics.appleRead(app: app.name)
        let changes = response.data.flatMap(\.lastTransactions).compactMap { change($0, app: app) }
        guard !changes.isEmpty else { return nil }
        let applied: [AppliedChange]
        do {
            applied = try await store.apply(changes, projectedThrough: nil)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
        for outcome in applied where outcome.changed {
            metrics.changed(app: app.name, source: "apple_read")
            metrics.made(outcome.events)
        }
        return applied.compactMap(\.record).last { $0.key.originalTransactionId == originalTransactionId }
    }

    /// The change one of Apple's `lastTransactions` makes (source: Apple read); nil when it carries no
    /// transaction, or cannot be applied (counted).
    private func change(_ last: LastTransaction, app: App) -> SubscriptionChange? {
        guard !last.signedTransactionInfo.isEmpty, let transaction = last.transaction else { return nil }
        let signedTransaction = SignedTransaction(jws: last.signedTransactionInfo, payload: transaction)
        let renewal = last.renewalInfo.flatMap { info in
            last.signedRenewalInfo.isEmpty ? nil : SignedRenewalInfo(jws: last.signedRenewalInfo, payload: info)
        }
        return change(
            transaction: signedTransaction, renewal: renewal, source: .appleRead, app: app,
            cause: SubscriptionEventContext.appleRead)
    }

    // MARK: - Writes

    /// Applies verified snapshots to the state, with the events they make (`cause`). Nil (nothing applied,
    /// counted) when they do not belong to `app` or cannot be filed (no ids); a store failure is UNAVAILABLE.
    func apply(
        transaction: SignedTransaction?, renewal: SignedRenewalInfo?, source: SnapshotSource, app: App, cause: String
    ) async throws(GatewayError) -> AppliedChange? {
        guard
            let change = change(transaction: transaction, renewal: renewal, source: source, app: app, cause: cause)
        else {
            return nil
        }
        do {
            return try await store.apply(change)
        } catch {
            throw GatewayError.stateStoreUnavailable(error.description)
        }
    }

    /// The change verified snapshots make to the state, making events with `cause` (nil: none, a rebuild's
    /// replay); nil (counted) when they do not belong to `app`, name no subscription, or name two different ones.
    func change(
        transaction: SignedTransaction?, renewal: SignedRenewalInfo?, source: SnapshotSource, app: App, cause: String?
    ) -> SubscriptionChange? {
        guard var key = Self.key(transaction: transaction?.payload, renewal: renewal?.payload) else {
            metrics.rejected(reason: "no_original_transaction_id")
            return nil
        }
        guard key.bundleId == app.bundleId || key.bundleId.isEmpty else {
            metrics.rejected(reason: "other_app")
            return nil
        }
        key.bundleId = app.bundleId
        do {
            return try SubscriptionChange(
                key: key, transaction: transaction, renewalInfo: renewal, source: source, nowMillis: nowMillis,
                events: cause.map { SubscriptionEventContext(app: app.name, policy: policy(of: app), cause: $0) })
        } catch {
            metrics.rejected(reason: "refused")
            return nil
        }
    }

    /// The record a pair of snapshots belongs to: the transaction's ids, else the renewal info's.
    static func key(transaction: Transaction?, renewal: RenewalInfo?) -> SubscriptionKey? {
        if let transaction, !transaction.originalTransactionId.isEmpty {
            return SubscriptionKey(of: transaction)
        }
        if let renewal, !renewal.originalTransactionId.isEmpty {
            return SubscriptionKey(
                bundleId: "", environment: renewal.environment, originalTransactionId: renewal.originalTransactionId)
        }
        return nil
    }

    // MARK: - Answers

    /// The environments a read looks in, in order: the asked one, else the app's policy's.
    static func environments(_ asked: Environment, of app: App) -> [Environment] {
        if asked != .unspecified { return [asked] }
        switch app.environment {
        case .production: return [.production]
        case .sandbox: return [.sandbox]
        case .auto: return [.production, .sandbox]
        case .xcode: return [.xcode, .localTesting]
        }
    }

    /// The record as the contract's `Subscription` now.
    func subscriptionMessage(_ record: SubscriptionRecord, app: App, stale: Bool) -> Subscription {
        Subscription(record, app: app.name, state: record.state(at: nowMillis, policy: policy(of: app)), stale: stale)
    }
}
