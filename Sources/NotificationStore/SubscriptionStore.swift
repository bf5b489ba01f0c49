import ProtoCodec
import SubscriptionState

/// Where the subscription state is kept: each subscription's record (ledger of transaction snapshots + newest
/// renewal info) and each customer's one-time purchases, and how far the notification log was projected into it.
/// A projection of the notification log and Apple's reads: `removeAll()` + replaying the log rebuilds it.
/// Every call may block on I/O: run on the store's own thread, never an event loop. Failures:
/// `NotificationStoreFailure` (its `kind` says whether retrying can help).
package protocol SubscriptionStore: Sendable {
    /// Applies each change as `apply(_:)` does, in order, and sets the projection position when one is given, all
    /// in one atomic commit: either everything is kept or nothing is. A projector passes a page of notifications
    /// and the position after it, so a crash between the two never leaves one without the other.
    func apply(_ changes: [SubscriptionChange], projectedThrough position: StorePosition?)
        async throws(NotificationStoreFailure) -> [AppliedChange]
    /// Applies the snapshots to their record (`SubscriptionRecord.apply`, the reducer's rules) atomically: one
    /// transaction reads the record, folds, writes what changed. A one-time purchase (non-consumable,
    /// non-renewing subscription) is kept as a purchase instead (newest snapshot per transactionId);
    /// consumables are ignored.
    func apply(_ change: SubscriptionChange) async throws(NotificationStoreFailure) -> AppliedChange
    /// The record of `key`, or nil when none is stored.
    func record(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord?
    /// The record of `key` holding its current transaction only (with its renewal info and bookkeeping), or nil
    /// when none is stored: all that its state (`SubscriptionRecord.state(at:policy:)`) and its answer need, read
    /// at a cost that does not grow with its ledger (a subscription gains a transaction with every renewal). Its
    /// state is the whole record's; never apply a change to it.
    func currentRecord(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord?
    /// `currentRecord(key)` unless the stored record still has `stamp` (a record the caller read before): then
    /// `.unchanged`, having read no more than the stamp. nil `stamp`: always the record.
    func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?)
        async throws(NotificationStoreFailure) -> CurrentRead
    /// One customer: every record whose current transaction carries `appAccountToken` (the renewal info's when
    /// the transaction has none; any group, incl. family-shared ones) and every purchase carrying it. An empty
    /// token names nobody.
    func customer(bundleId: String, environment: Environment, appAccountToken: String)
        async throws(NotificationStoreFailure) -> CustomerView
    /// One customer known only by one original transaction id: its record (if any) and any purchase with that
    /// originalTransactionId.
    func customer(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> CustomerView
    /// The notification-log position the state includes (`StorePosition.zero` when nothing was projected).
    func projectedThrough() async throws(NotificationStoreFailure) -> StorePosition
    /// Records that the state includes the notification log up to `position`.
    func setProjectedThrough(_ position: StorePosition) async throws(NotificationStoreFailure)
    /// Deletes all state and the projection position (for `state rebuild`). The events and their cursors stay:
    /// they are what consumers were told, and the rebuilt state is compared with them
    /// (`advance(_:context:nowMillis:)` with cause "rebuild").
    func removeAll() async throws(NotificationStoreFailure)

    // MARK: Events (an outbox in the state's own commits)

    /// Makes the events of `key`'s state at `nowMillis` after its cursor, in one commit with the new cursor: what
    /// time alone changed (cause "time"), or what a rebuild changed (cause "rebuild"). Empty when nothing changed
    /// or no record is stored (then the cursor's next transition is forgotten: nothing is due for it).
    func advance(_ key: SubscriptionKey, context: SubscriptionEventContext, nowMillis: Int64)
        async throws(NotificationStoreFailure) -> [SubscriptionEvent]
    /// Subscriptions of `bundleIds` whose state time changes at or before `nowMillis` (their cursor's next
    /// transition), earliest first, at most `limit`.
    func dueTransitions(through nowMillis: Int64, bundleIds: [String], limit: Int)
        async throws(NotificationStoreFailure) -> [SubscriptionKey]
    /// The earliest next transition of `bundleIds`' subscriptions (nil when none is ahead): how long a timer may
    /// sleep.
    func nextTransition(bundleIds: [String]) async throws(NotificationStoreFailure) -> Int64?
    /// Every record's key, after `key` (nil: from the first), in key order, at most `limit`: a rebuild's walk.
    func recordKeys(after key: SubscriptionKey?, limit: Int) async throws(NotificationStoreFailure)
        -> [SubscriptionKey]
    /// Every one-time purchase, after `key` (nil: from the first), in key order (bundle id, environment name,
    /// transaction id, each compared as UTF-8 bytes), at most `limit`: an export's walk, one page at a time.
    func purchases(after key: PurchaseKey?, limit: Int) async throws(NotificationStoreFailure) -> [StoredPurchase]
    /// Events after `position` (0: from the first retained), in position order, at most `limit`; only `bundleId`'s
    /// when given.
    func events(after position: Int64, bundleId: String?, limit: Int) async throws(NotificationStoreFailure)
        -> [StoredSubscriptionEvent]
    /// The position of the newest event (0 when none was made).
    func lastEventPosition() async throws(NotificationStoreFailure) -> Int64
    /// Deletes events that occurred before `millis` (`subscriptions.eventRetention`); returns how many.
    func pruneEvents(occurredBefore millis: Int64) async throws(NotificationStoreFailure) -> Int
    /// The newest position pruning ever deleted (0 when none): a stream resuming before it would miss events.
    func eventsPrunedThrough() async throws(NotificationStoreFailure) -> Int64
    /// Raised after every commit that made events: followers wait on it.
    var eventSignal: LiveSignal { get }
}

/// One event as kept: its place in the store's event order, and the event (`resumeToken` empty).
package struct StoredSubscriptionEvent: Sendable, Hashable {
    /// Grows with every event the store keeps (1, 2, …; gaps where events were pruned).
    package var position: Int64
    package var event: SubscriptionEvent

    package init(position: Int64, event: SubscriptionEvent) {
        self.position = position
        self.event = event
    }
}

extension SubscriptionStore {
    /// The whole record: a store without a cheaper read of the current transaction alone (the memory store).
    package func currentRecord(_ key: SubscriptionKey) async throws(NotificationStoreFailure) -> SubscriptionRecord? {
        try await record(key)
    }

    /// The record read whole and its stamp compared: a store with no cheaper read of the stamp alone.
    package func currentRecord(_ key: SubscriptionKey, unlessStamped stamp: RecordStamp?)
        async throws(NotificationStoreFailure) -> CurrentRead
    {
        guard let record = try await currentRecord(key) else { return .missing }
        let found = RecordStamp(record)
        return found == stamp ? .unchanged : .record(record, found)
    }

    /// One change, committed on its own.
    package func apply(_ change: SubscriptionChange) async throws(NotificationStoreFailure) -> AppliedChange {
        let applied = try await apply([change], projectedThrough: nil)
        guard applied.count == 1 else { preconditionFailure("a store answers one AppliedChange per change") }
        return applied[0]
    }
}

/// What tells one stored state of a record from another without reading its snapshots: its version (grows with
/// every change, under the record's lock), the time of its last change and the transaction its row names as
/// current. Two reads with equal stamps read the same record; a record removed and made again (`removeAll`, a
/// rebuild) has a later update time.
package struct RecordStamp: Sendable, Hashable {
    package var version: UInt64
    package var updatedAtMillis: Int64
    package var currentTransactionId: String

    package init(version: UInt64, updatedAtMillis: Int64, currentTransactionId: String) {
        self.version = version
        self.updatedAtMillis = updatedAtMillis
        self.currentTransactionId = currentTransactionId
    }

    /// The stamp of `record` as a store would write it (the current transaction the reducer chooses).
    package init(_ record: SubscriptionRecord) {
        self.init(
            version: record.version, updatedAtMillis: record.updatedAtMillis,
            currentTransactionId: record.currentTransaction?.payload.transactionId ?? "")
    }
}

/// What `SubscriptionStore.currentRecord(_:unlessStamped:)` found.
package enum CurrentRead: Sendable {
    /// No record is stored for the key.
    case missing
    /// The stored record still has the stamp asked about.
    case unchanged
    /// The record (its current transaction alone) and its stamp.
    case record(SubscriptionRecord, RecordStamp)
}

/// What identifies one kept one-time purchase: the app (by bundle id), the environment and its `transactionId`.
package struct PurchaseKey: Sendable, Hashable {
    package var bundleId: String
    package var environment: Environment
    package var transactionId: String

    /// The key of the given app, environment and transaction.
    package init(bundleId: String, environment: Environment, transactionId: String) {
        self.bundleId = bundleId
        self.environment = environment
        self.transactionId = transactionId
    }

    /// The key `transaction` is kept under.
    package init(of transaction: Transaction) {
        self.init(
            bundleId: transaction.bundleId, environment: transaction.environment,
            transactionId: transaction.transactionId)
    }
}

/// One one-time purchase as kept: its newest snapshot and the bookkeeping of the change that kept it.
package struct StoredPurchase: Sendable, Hashable {
    /// The newest snapshot of the purchase's transaction.
    package var purchase: SignedTransaction
    /// The `nowMillis` of the change that kept this snapshot.
    package var updatedAtMillis: Int64
    /// Who brought that change.
    package var source: SnapshotSource

    package init(purchase: SignedTransaction, updatedAtMillis: Int64, source: SnapshotSource) {
        self.purchase = purchase
        self.updatedAtMillis = updatedAtMillis
        self.source = source
    }

    /// Where it is kept.
    package var key: PurchaseKey { PurchaseKey(of: purchase.payload) }
}

/// Signed snapshots to fold into the state: a transaction, its subscription's renewal info, or both, as one
/// notification, one Apple answer or one app post brings them. Checked against `key` when made, so a store
/// never meets a snapshot of another subscription.
package struct SubscriptionChange: Sendable, Hashable {
    /// Where the change goes, decided by the transaction's product type.
    package enum Destination: Sendable, Hashable {
        /// An auto-renewable subscription's record (also a renewal info alone).
        case subscription
        /// A one-time purchase that grants access: a non-consumable or a non-renewing subscription.
        case purchase
        /// Kept nowhere: a consumable grants nothing lasting, and a product type this release does not know
        /// grants nothing the reducer knows.
        case ignored
    }

    /// The subscription (or, for a purchase, the original transaction) the snapshots are about.
    package let key: SubscriptionKey
    /// A transaction snapshot, when the change has one.
    package let transaction: SignedTransaction?
    /// A renewal-info snapshot, when the change has one (ignored unless `destination` is `.subscription`).
    package let renewalInfo: SignedRenewalInfo?
    /// Who brought the change.
    package let source: SnapshotSource
    /// The instant of the change (UNIX ms): the record's `updatedAtMillis` when it changes something.
    package let nowMillis: Int64
    /// What the change's events are made under; nil makes none and leaves the cursor as it was (a rebuild's
    /// replay, compared with the cursors once at its end).
    package var events: SubscriptionEventContext?

    /// A change of `key`'s record. Throws, as `SubscriptionRecord.apply` would, when a snapshot names another
    /// app, environment or subscription than `key`, or the transaction has no `transactionId`.
    package init(
        key: SubscriptionKey, transaction: SignedTransaction?, renewalInfo: SignedRenewalInfo?,
        source: SnapshotSource, nowMillis: Int64, events: SubscriptionEventContext? = nil
    ) throws(SnapshotRefusal) {
        // The reducer's own checks, on an empty record: a store applying the change later cannot be refused.
        var probe = SubscriptionRecord(key: key)
        try probe.apply(transaction: transaction, renewalInfo: renewalInfo, source: source, nowMillis: nowMillis)
        self.key = key
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.source = source
        self.nowMillis = nowMillis
        self.events = events
    }

    /// A change keyed by `transaction`'s own app, environment and original transaction id.
    package init(
        transaction: SignedTransaction, renewalInfo: SignedRenewalInfo? = nil, source: SnapshotSource,
        nowMillis: Int64, events: SubscriptionEventContext? = nil
    ) throws(SnapshotRefusal) {
        try self.init(
            key: SubscriptionKey(of: transaction.payload), transaction: transaction, renewalInfo: renewalInfo,
            source: source, nowMillis: nowMillis, events: events)
    }

    /// Where a store keeps it: by the transaction's product type; a renewal info alone is a subscription's.
    package var destination: Destination {
        guard let transaction else { return .subscription }
        switch transaction.payload.type {
        case .autoRenewable: return .subscription
        case .nonConsumable, .nonRenewable: return .purchase
        default: return .ignored
        }
    }
}

/// What `SubscriptionStore.apply` did.
package struct AppliedChange: Sendable, Hashable {
    /// The subscription's record after the change, also when nothing changed; nil for a purchase or an ignored
    /// change.
    package var record: SubscriptionRecord?
    /// The purchase's newest snapshot after the change, also when nothing changed; nil otherwise.
    package var purchase: SignedTransaction?
    /// Whether anything was written: false for a duplicate, an older snapshot or an ignored change (then the
    /// record's `version` did not grow).
    package var changed: Bool
    /// The events the change made (none when it changed nothing, or `SubscriptionChange.events` was nil), kept
    /// in the same commit.
    package var events: [SubscriptionEvent]

    /// An outcome of `apply`.
    package init(
        record: SubscriptionRecord?, purchase: SignedTransaction?, changed: Bool, events: [SubscriptionEvent] = []
    ) {
        self.record = record
        self.purchase = purchase
        self.changed = changed
        self.events = events
    }
}

/// The bounds of what one subscription-store call keeps or loads: a damaged or abused store fails the call
/// (`NotificationStoreFailure.Kind.limitExceeded` or `.corrupt`) instead of exhausting memory.
package struct SubscriptionStoreLimits: Sendable, Hashable {
    /// Most transaction snapshots one read loads: one record's ledger, or all of one customer's records
    /// together. An apply that would grow a record past it fails. Default 10,000 (a weekly subscription renews
    /// 52 times a year).
    package var transactionsPerRead = 10_000
    /// Most subscription records one customer read loads. Default 1,000.
    package var recordsPerCustomer = 1_000
    /// Most one-time purchases one customer read loads. Default 10,000.
    package var purchasesPerCustomer = 10_000
    /// Largest JWS, and largest encoded payload, read back from disk. Default 1 MiB.
    package var snapshotBytes = 1 << 20

    /// The defaults above.
    package init() {}

    /// The defaults above.
    package static let defaults = SubscriptionStoreLimits()
}
