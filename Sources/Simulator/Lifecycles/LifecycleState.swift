import AppStoreDomain

/// The simulated world of one lifecycle at its simulated instant `now`: the purchaser's auto-renewable subscription,
/// the records of family members it is shared with, and one-time purchases. A value: `applying(_:)` returns the
/// next state and the notifications to send, so every lifecycle is tested without I/O.
package struct LifecycleState: Sendable, Hashable {
    /// The app whose products the lifecycle buys.
    package let bundleId: String
    /// The environment its transactions belong to.
    package let environment: AppleEnvironment
    /// The simulated instant (UNIX ms): every event of the last step happened then.
    package internal(set) var now: Int64
    /// The purchaser's subscription (nil before the first purchase of one).
    package internal(set) var subscription: SubscriptionRecord?
    /// Family members' records, in the order they joined.
    package internal(set) var familyMembers: [SubscriptionRecord] = []
    /// One-time purchases (non-consumables, consumables, non-renewing subscriptions), oldest first.
    package internal(set) var purchases: [SimulatedTransaction] = []
    /// The purchaser's `appTransactionId`.
    package let appTransactionId: String
    /// The purchaser's `appAccountToken`.
    package let appAccountToken: String
    var identifiers: LifecycleIdentifiers
    /// Notifications produced so far (the next one's UUID is derived from it).
    var notificationCount = 0
    let seed: UInt64

    /// Apple allows a family of six: the purchaser and five members.
    package static let maximumFamilyMembers = 5

    /// A lifecycle numbered `number` (which fixes its ids, `LifecycleIdentifiers`) starting at `start` (UNIX ms).
    package init(bundleId: String, environment: AppleEnvironment, number: UInt64, start: Int64, seed: UInt64) {
        self.bundleId = bundleId
        self.environment = environment
        now = start
        self.seed = seed
        identifiers = LifecycleIdentifiers(environment: environment, number: number)
        appTransactionId = identifiers.nextAppTransactionId()
        var random = DeterministicRandom(seed: seed, stream: "lifecycle/\(number)/account")
        appAccountToken = random.uuid()
    }

    /// The original transaction id of the lifecycle: that of the first transaction it creates.
    package var originalTransactionId: String { identifiers.firstTransactionId }

    /// The purchaser's subscription status at `now` (nil before one was bought).
    package var status: Int? { subscription?.status(at: now) }

    /// Every record: the purchaser's subscription first, then the family members'.
    package var records: [SubscriptionRecord] { (subscription.map { [$0] } ?? []) + familyMembers }

    /// Every transaction of the lifecycle.
    package var transactions: [SimulatedTransaction] { records.flatMap(\.transactions) + purchases }

    /// The transaction with `transactionId`, as of now.
    package func transaction(_ transactionId: String) -> SimulatedTransaction? {
        transactions.first { $0.transactionId == transactionId }
    }

    /// The auto-renewable subscriptions of the customer (Apple Account) owning `transactionId`, as Get All
    /// Subscription Statuses lists them: the purchaser's for the purchaser's ids, a member's own for the member's;
    /// nil for an id of no transaction here.
    package func customerSubscriptions(owning transactionId: String) -> [SubscriptionRecord]? {
        if let member = familyMembers.first(where: { $0.contains(transactionId) }) { return [member] }
        if subscription?.contains(transactionId) == true
            || purchases.contains(where: {
                $0.transactionId == transactionId
            })
        {
            return subscription.map { [$0] } ?? []
        }
        return nil
    }

    /// The product of this app named `reference`: a full product id, or its part after the bundle id
    /// (`premium.monthly`).
    package func product(_ reference: String) -> SimulatedProduct? {
        let catalog = ProductCatalog(bundleId: bundleId)
        return catalog.product(reference) ?? catalog.product("\(bundleId).\(reference)")
    }
}

/// One auto-renewable subscription of one customer: its transactions (the newest snapshot of each) and its renewal
/// info, whose `status` is kept equal to `status(at:)` of the lifecycle's instant.
package struct SubscriptionRecord: Sendable, Hashable {
    /// Oldest first; the last is the current one (the latest purchase).
    package internal(set) var transactions: [SimulatedTransaction]
    /// The renewal info as of the lifecycle's instant.
    package internal(set) var renewal: SimulatedRenewalInfo
    /// `autoRenewStatus` before a refund of the current period turned it off (restored if the refund is reversed).
    var autoRenewStatusBeforeRefund: Int?

    /// The current transaction: the latest purchase or renewal.
    package var current: SimulatedTransaction { transactions[transactions.count - 1] }

    /// The subscription's original transaction id.
    package var originalTransactionId: String { renewal.originalTransactionId }

    /// Whether `transactionId` is one of this subscription's.
    package func contains(_ transactionId: String) -> Bool {
        transactions.contains { $0.transactionId == transactionId }
    }

    /// Apple's status (1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked) at `now`, from the
    /// dates, as Get All Subscription Statuses derives it: revoked when the current transaction is; active while it
    /// has not expired; grace while in billing retry before `gracePeriodExpiresDate`; billing retry; expired.
    package func status(at now: Int64) -> Int {
        if current.revocationDate != nil { return 5 }
        if let expires = current.expiresDate, expires > now { return 1 }
        if renewal.isInBillingRetryPeriod == true {
            if let grace = renewal.gracePeriodExpiresDate, grace > now { return 4 }
            return 3
        }
        return 2
    }
}

/// The ids of lifecycle number `number`, apart from the generated histories' (which stay below 10^14 above their
/// environment's base): transaction ids from base + 950·10^12 + number·10^4, web order line items from
/// base + 960·10^12 + number·10^4, app transaction ids from 705·10^15 + number·10. So a lifecycle has at most 10^4
/// transactions (bounded far below by `LifecycleLimits.maximumSteps`) and its first transaction id is known before
/// it is bought.
struct LifecycleIdentifiers: Sendable, Hashable {
    private let transactionBase: UInt64
    private let webOrderBase: UInt64
    private let appTransactionBase: UInt64
    private var transactions: UInt64 = 0
    private var webOrders: UInt64 = 0
    private var appTransactions: UInt64 = 0

    /// Per lifecycle: 10^4 transaction ids and 10 app transaction ids (the purchaser and up to 9 members).
    static let transactionsPerLifecycle: UInt64 = 10_000

    init(environment: AppleEnvironment, number: UInt64) {
        let base: UInt64 = environment == .production ? 2_000_000_000_000_000 : 1_000_000_000_000_000
        let slot = (number % 1_000_000_000) * Self.transactionsPerLifecycle
        transactionBase = base + 950_000_000_000_000 + slot
        webOrderBase = base + 960_000_000_000_000 + slot
        appTransactionBase = 705_000_000_000_000_000 + (number % 1_000_000_000_000) * 10
    }

    var firstTransactionId: String { String(transactionBase) }

    mutating func nextTransactionId() -> String {
        defer { transactions += 1 }
        return String(transactionBase + transactions)
    }

    mutating func nextWebOrderLineItemId() -> String {
        defer { webOrders += 1 }
        return String(webOrderBase + webOrders)
    }

    mutating func nextAppTransactionId() -> String {
        defer { appTransactions += 1 }
        return String(appTransactionBase + appTransactions)
    }
}

/// Why a step cannot happen in the lifecycle's state (a script out of order, a product of another group, a
/// renewal before the period ends). The state is unchanged.
package struct LifecycleStepError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What prevents the step.
    package var description: String

    /// A refusal saying `description`.
    package init(_ description: String) { self.description = description }
}
