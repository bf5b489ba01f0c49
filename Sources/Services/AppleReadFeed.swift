import AppStoreDomain
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SubscriptionState

/// The signed snapshots one of Apple's answers carried, each verified for a caller (chain, the caller's app, the
/// answering environment) and decoded: what a pass-through RPC hands to the subscription state.
struct VerifiedSnapshots: Sendable {
    var transactions: [SignedTransaction] = []
    var renewals: [SignedRenewalInfo] = []

    var count: Int { transactions.count + renewals.count }
    var isEmpty: Bool { transactions.isEmpty && renewals.isEmpty }

    /// Adds `other`'s snapshots after these (a later page of the same answer).
    mutating func append(_ other: VerifiedSnapshots) {
        transactions += other.transactions
        renewals += other.renewals
    }

    /// The state's changes these snapshots make: one per transaction, in order; a renewal info goes with the first
    /// transaction of its subscription (same `originalTransactionId`), as Apple pairs them in Get All Subscription
    /// Statuses; one no transaction claimed is a change of its own. Each element is the transaction and renewal
    /// info of one change.
    func pairs() -> [(transaction: SignedTransaction?, renewal: SignedRenewalInfo?)] {
        // The first unclaimed renewal info of each subscription, by original transaction id.
        var unclaimed: [String: Int] = [:]
        unclaimed.reserveCapacity(renewals.count)
        for (index, renewal) in renewals.enumerated() where !renewal.payload.originalTransactionId.isEmpty {
            if unclaimed[renewal.payload.originalTransactionId] == nil {
                unclaimed[renewal.payload.originalTransactionId] = index
            }
        }
        var claimed = [Bool](repeating: false, count: renewals.count)
        var pairs: [(transaction: SignedTransaction?, renewal: SignedRenewalInfo?)] = []
        pairs.reserveCapacity(count)
        for transaction in transactions {
            let original = transaction.payload.originalTransactionId
            guard !original.isEmpty, let index = unclaimed.removeValue(forKey: original) else {
                pairs.append((transaction, nil))
                continue
            }
            claimed[index] = true
            pairs.append((transaction, renewals[index]))
        }
        for (index, renewal) in renewals.enumerated() where !claimed[index] { pairs.append((nil, renewal)) }
        return pairs
    }

    /// The first `limit` snapshots (transactions first, then renewal infos).
    func prefix(_ limit: Int) -> VerifiedSnapshots {
        let transactionCount = min(max(0, limit), transactions.count)
        let renewalCount = min(max(0, limit - transactionCount), renewals.count)
        return VerifiedSnapshots(
            transactions: Array(transactions.prefix(transactionCount)), renewals: Array(renewals.prefix(renewalCount)))
    }
}

/// Where `AppleAnswer` notes the snapshots it verified during one decoding of an answer; the handler takes them
/// once that decoding succeeded (a decoding that failed, or that is repeated after fetching revocation statuses,
/// hands over nothing of its own).
final class VerifiedSnapshotNotes: Sendable {
    private let notes = Lock(VerifiedSnapshots())

    func add(_ transaction: SignedTransaction) { notes.withLock { $0.transactions.append(transaction) } }
    func add(_ renewal: SignedRenewalInfo) { notes.withLock { $0.renewals.append(renewal) } }

    /// What was noted.
    var taken: VerifiedSnapshots { notes.withLock { $0 } }
}

/// Feeds the subscription state with what the pass-through RPCs (GetHistory, GetTransactionInfo, Get All
/// Subscription Statuses, Look Up Order ID, Get Refund History, the Advanced Commerce writes) verified for their
/// callers: every such transaction and renewal info is an Apple read of the state (source `.appleRead`, events
/// with cause `apple-read`), so a later GetSubscription needs no Apple call of its own for it.
///
/// Never on the caller's path: `observe` queues the snapshots and returns; one detached task at a time applies
/// the queue, so the caller's answer neither waits for the state's commit nor fails with the store. The queue is
/// bounded (`maxPending` snapshots waiting or being applied): beyond it, snapshots are dropped and counted
/// (`appstore_gateway_state_pass_through_dropped_total{reason="backlog"}`), as are those a failed commit lost
/// (`reason="store"`). Dropping loses nothing the state cannot have again: it reads Apple itself when it lacks
/// a subscription.
final class AppleReadFeed: Sendable {
    /// Default `maxPending`: above what one answer can carry within `history.maxResponseBytes` (4 MB), so a
    /// single large GetHistory is taken whole, while the memory held stays in the tens of MB.
    static let defaultMaxPending = 4_096
    /// Most changes in one commit: a long GetHistory is applied in short transactions, so the webhook's
    /// projector, which writes the same store, never waits behind a long one.
    static let changesPerCommit = 64

    let states: SubscriptionStates
    let maxPending: Int
    private let queue = Lock(Queue())

    private struct Queue {
        var answers: [(app: App, snapshots: VerifiedSnapshots)] = []
        /// Snapshots queued or being applied.
        var pending = 0
        /// Whether a task is applying the queue.
        var draining = false
        /// Who waits for the queue to be empty and no task applying it (`settled()`).
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(states: SubscriptionStates, maxPending: Int = AppleReadFeed.defaultMaxPending) {
        self.states = states
        self.maxPending = max(1, maxPending)
    }

    /// Queues `snapshots`, verified for `app`, to be applied to the state; returns at once. What does not fit
    /// under `maxPending` is dropped and counted.
    func observe(_ snapshots: VerifiedSnapshots, app: App) {
        guard !snapshots.isEmpty else { return }
        let (admitted, start) = queue.withLock { queue -> (Int, Bool) in
            let admitted = min(snapshots.count, maxPending - queue.pending)
            guard admitted > 0 else { return (0, false) }
            queue.answers.append((app, admitted == snapshots.count ? snapshots : snapshots.prefix(admitted)))
            queue.pending += admitted
            let start = !queue.draining
            queue.draining = true
            return (admitted, start)
        }
        states.metrics.passThroughDropped(reason: "backlog", snapshots: snapshots.count - admitted)
        guard start else { return }
        // Detached: the caller's task-locals (its log line, its identity, its trace) stay with the call, which does
        // not wait for this work; nor does the caller's cancellation reach it.
        Task.detached { [self] in await drain() }
    }

    /// Returns once everything queued so far has been applied (or dropped) and no task is applying. For tests: a
    /// shutdown does not wait for it, since what is still queued then is only lost to the state, which reads Apple
    /// for a subscription it lacks when asked.
    func settled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = queue.withLock { queue -> Bool in
                guard queue.draining else { return true }
                queue.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Applies the queue until it is empty, taking what was queued meanwhile each round.
    private func drain() async {
        while let taken = take() {
            await apply(taken)
            let count = taken.reduce(0) { $0 + $1.snapshots.count }
            queue.withLock { $0.pending -= count }
        }
    }

    /// Everything queued, emptying the queue; nil when it is empty, and then this task stops applying (in the
    /// same lock, so the next `observe` starts another) and whoever waits in `settled()` resumes.
    private func take() -> [(app: App, snapshots: VerifiedSnapshots)]? {
        let (taken, waiters) = queue.withLock {
            queue -> ([(app: App, snapshots: VerifiedSnapshots)]?, [CheckedContinuation<Void, Never>]) in
            guard queue.answers.isEmpty else {
                defer { queue.answers = [] }
                return (queue.answers, [])
            }
            queue.draining = false
            defer { queue.waiters = [] }
            return (nil, queue.waiters)
        }
        for waiter in waiters { waiter.resume() }
        return taken
    }

    /// The answers' changes, applied `changesPerCommit` at a time; changes the state refuses (another app, no
    /// ids) are counted by `SubscriptionStates.change`, a failed commit by its snapshots.
    private func apply(_ answers: [(app: App, snapshots: VerifiedSnapshots)]) async {
        var changes: [SubscriptionChange] = []
        var apps: [String] = []
        var snapshots = 0
        for (app, answer) in answers {
            for (transaction, renewal) in answer.pairs() {
                let change = states.change(
                    transaction: transaction, renewal: renewal, source: .appleRead, app: app,
                    cause: SubscriptionEventContext.appleRead)
                guard let change else { continue }
                changes.append(change)
                snapshots += (transaction == nil ? 0 : 1) + (renewal == nil ? 0 : 1)
                apps.append(app.name)
                if changes.count == Self.changesPerCommit {
                    await commit(changes, apps: apps, snapshots: snapshots)
                    changes.removeAll(keepingCapacity: true)
                    apps.removeAll(keepingCapacity: true)
                    snapshots = 0
                }
            }
        }
        if !changes.isEmpty { await commit(changes, apps: apps, snapshots: snapshots) }
    }

    private func commit(_ changes: [SubscriptionChange], apps: [String], snapshots: Int) async {
        let applied: [AppliedChange]
        do {
            applied = try await states.store.apply(changes, projectedThrough: nil)
        } catch {
            states.metrics.passThroughDropped(reason: "store", snapshots: snapshots)
            return
        }
        for (outcome, app) in zip(applied, apps) where outcome.changed {
            states.metrics.changed(app: app, source: "apple_read")
            states.metrics.made(outcome.events)
        }
    }
}
