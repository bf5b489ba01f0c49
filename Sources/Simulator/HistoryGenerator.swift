import AppStoreDomain
import Foundation

/// Generates the purchase histories of one app in one environment, deterministically from the seed:
/// the same seed, customer count and reference time always give the same ids, dates and events.
struct HistoryGenerator {
    let bundleId: String
    let environment: AppleEnvironment
    let catalog: ProductCatalog
    /// "Now" for the generated data: nothing happens after it.
    let referenceTime: Int64
    let seed: UInt64
    var ids: IdentifierSequence

    init(bundleId: String, environment: AppleEnvironment, seed: UInt64, referenceTime: Int64) {
        self.bundleId = bundleId
        self.environment = environment
        self.catalog = ProductCatalog(bundleId: bundleId)
        self.referenceTime = referenceTime
        self.seed = seed
        ids = IdentifierSequence(bundleId: bundleId, environment: environment)
    }

    /// Customers 0..<count. Customer 0 is always a long-lived monthly subscriber with many consumables,
    /// so there is always a history of several pages.
    mutating func customers(count: Int) -> [SimulatedCustomer] {
        (0..<count).map { customer(index: $0) }
    }

    mutating func customer(index: Int) -> SimulatedCustomer {
        var random = DeterministicRandom(seed: seed, stream: "\(bundleId)/\(environment)/\(index)")
        let storefront = random.pick(Storefront.all)
        let familyShared = index != 0 && random.chance(0.12)
        var context = PurchaseContext(
            storefront: storefront, ownership: familyShared ? "FAMILY_SHARED" : "PURCHASED",
            appAccountToken: random.chance(0.5) ? random.uuid() : nil, appTransactionId: ids.nextAppTransactionId(),
            transactions: [], renewals: [], notifications: [])
        if index == 0 || random.chance(0.75) {
            subscription(group: catalog.premiumGroup, longLived: index == 0, random: &random, context: &context)
        }
        if random.chance(0.3) {
            subscription(group: catalog.newsGroup, longLived: false, random: &random, context: &context)
        }
        let consumableCount = index == 0 ? 12 : (random.chance(0.4) ? random.int(1...6) : 0)
        for _ in 0..<consumableCount where !familyShared {
            oneTimePurchase("\(bundleId).coins.100", quantity: random.int(1...5), random: &random, context: &context)
        }
        if index == 0 || random.chance(0.3) {
            oneTimePurchase(
                random.pick(["\(bundleId).unlock.lifetime", "\(bundleId).remove.ads"]), quantity: 1, random: &random,
                context: &context)
        }
        if random.chance(0.15) {
            oneTimePurchase("\(bundleId).season.pass", quantity: 1, random: &random, context: &context)
        }
        if index == 0 { showcase(random: &random, context: &context) }
        context.transactions.sort { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        context.notifications.sort { ($0.date, $0.notificationUUID) < ($1.date, $1.notificationUUID) }
        return SimulatedCustomer(
            index: index, appTransactionId: context.appTransactionId, transactions: context.transactions,
            renewals: context.renewals, notifications: context.notifications)
    }

    /// How far back purchases start: about three years in production, a month in sandbox.
    func historyWindow() -> Int64 {
        environment == .production ? 1_000 * Self.day : 30 * Self.day
    }

    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000

    /// A consumable, non-consumable or non-renewing purchase, possibly refunded later.
    mutating func oneTimePurchase(
        _ productId: String, quantity: Int, random: inout DeterministicRandom, context: inout PurchaseContext
    ) {
        guard let product = catalog.product(productId) else { return }
        let purchase = referenceTime - Int64(random.int(1...Int(historyWindow() / 60_000))) * 60_000
        var transaction = makeTransaction(
            product: product, purchaseDate: purchase, originalPurchaseDate: purchase, originalTransactionId: nil,
            reason: "PURCHASE", context: context)
        transaction.quantity = quantity
        transaction.price = context.storefront.price(product.priceMilliunits) * Int64(quantity)
        transaction.isFinished = product.kind != .consumable || random.chance(0.8)
        if product.kind == .nonRenewing {
            transaction.expiresDate = nil
        }
        if random.chance(0.08) {
            context.notifications.append(
                notification("ONE_TIME_CHARGE", nil, at: purchase, transaction, random: &random))
        }
        if random.chance(0.12) {
            let refundDate = min(referenceTime, purchase + Int64(random.int(1...20)) * Self.day)
            let prorated = product.kind == .consumable && random.chance(0.5)
            transaction.revocationDate = refundDate
            transaction.revocationReason = random.int(0...1)
            transaction.revocationType = prorated ? "REFUND_PRORATED" : "REFUND_FULL"
            transaction.revocationPercentage = prorated ? random.int(2...9) * 10_000 : 100_000
            transaction.modifiedDate = refundDate
            if product.kind == .consumable {
                context.notifications.append(
                    notification(
                        "CONSUMPTION_REQUEST", nil, at: max(purchase, refundDate - Self.day), transaction,
                        random: &random))
            }
            context.notifications.append(notification("REFUND", nil, at: refundDate, transaction, random: &random))
        }
        context.transactions.append(transaction)
    }

    /// A transaction of `product` with the customer's storefront and identity.
    mutating func makeTransaction(
        product: SimulatedProduct, purchaseDate: Int64, originalPurchaseDate: Int64, originalTransactionId: String?,
        reason: String, context: PurchaseContext
    ) -> SimulatedTransaction {
        let transactionId = ids.nextTransactionId()
        return SimulatedTransaction(
            transactionId: transactionId, originalTransactionId: originalTransactionId ?? transactionId,
            webOrderLineItemId: product.kind == .autoRenewable ? ids.nextWebOrderLineItemId() : nil,
            bundleId: bundleId, productId: product.productId, kind: product.kind,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier, purchaseDate: purchaseDate,
            originalPurchaseDate: originalPurchaseDate, expiresDate: nil, quantity: 1,
            appAccountToken: context.appAccountToken,
            inAppOwnershipType: product.kind == .consumable ? "PURCHASED" : context.ownership,
            revocationReason: nil, revocationDate: nil, revocationType: nil, revocationPercentage: nil,
            isUpgraded: false, offerType: nil, offerIdentifier: nil, offerDiscountType: nil, offerPeriod: nil,
            environment: environment, storefront: context.storefront.country,
            storefrontId: context.storefront.storefrontId, transactionReason: reason,
            currency: context.storefront.currency, price: context.storefront.price(product.priceMilliunits),
            appTransactionId: context.appTransactionId, isFinished: true, modifiedDate: purchaseDate)
    }

    /// A notification about `transaction` at `date`, with its delivery attempts.
    func notification(
        _ type: String, _ subtype: String?, at date: Int64, _ transaction: SimulatedTransaction,
        random: inout DeterministicRandom
    ) -> SimulatedNotification {
        SimulatedNotification(
            notificationUUID: random.uuid(), notificationType: type, subtype: subtype, date: date,
            transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
            sendAttempts: SendAttemptSchedule.attempts(
                firstAt: date, environment: environment, until: referenceTime, random: &random))
    }
}

/// What one customer has bought so far, while their history is generated.
struct PurchaseContext {
    var storefront: Storefront
    var ownership: String
    var appAccountToken: String?
    var appTransactionId: String
    var transactions: [SimulatedTransaction]
    var renewals: [SimulatedRenewalInfo]
    var notifications: [SimulatedNotification]
}

/// Increasing, realistic-looking numeric ids (16 digits like Apple's), distinct per app and environment.
struct IdentifierSequence {
    private var nextTransaction: UInt64
    private var nextWebOrder: UInt64
    private var nextAppTransaction: UInt64

    init(bundleId: String, environment: AppleEnvironment) {
        let appOffset = (ProductCatalog.stableNumber(bundleId) % 900) * 1_000_000_000
        let environmentBase: UInt64 = environment == .production ? 2_000_000_000_000_000 : 1_000_000_000_000_000
        nextTransaction = environmentBase + appOffset + 100_000_000
        nextWebOrder = environmentBase + appOffset + 50_000_000
        nextAppTransaction = 704_000_000_000_000_000 + appOffset
    }

    mutating func nextTransactionId() -> String {
        nextTransaction += 1 + nextTransaction % 7919 % 97
        return String(nextTransaction)
    }

    mutating func nextWebOrderLineItemId() -> String {
        nextWebOrder += 1 + nextWebOrder % 61
        return String(nextWebOrder)
    }

    mutating func nextAppTransactionId() -> String {
        nextAppTransaction += 1 + nextAppTransaction % 1_009
        return String(nextAppTransaction)
    }
}

/// Apple's retry schedule for V2 notifications: in production up to five retries at +1 h, +12 h,
/// +24 h, +48 h and +72 h after the previous try; one attempt in sandbox (Apple's App Store Server API documentation).
/// Besides random failures, the developer's server has one outage (production: from 20 to 12 days
/// before the reference time, so early notifications in it exhaust their retries; sandbox: one day).
enum SendAttemptSchedule {
    static let failures = [
        "TIMED_OUT", "NO_RESPONSE", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "TLS_ISSUE", "SOCKET_ISSUE",
        "PREMATURE_CLOSE", "INVALID_RESPONSE", "CIRCULAR_REDIRECT", "UNSUPPORTED_CHARSET", "OTHER",
    ]
    static let retryDelaysHours: [Int64] = [1, 12, 24, 48, 72]

    static func attempts(
        firstAt date: Int64, environment: AppleEnvironment, until now: Int64, random: inout DeterministicRandom
    ) -> [SimulatedSendAttempt] {
        let day = HistoryGenerator.day
        let outage =
            environment == .production ? (now - 20 * day)..<(now - 12 * day) : (now - 3 * day)..<(now - 2 * day)
        func attempt(at time: Int64, successChance: Double) -> SimulatedSendAttempt {
            let succeeds = !outage.contains(time) && random.chance(successChance)
            return SimulatedSendAttempt(attemptDate: time, result: succeeds ? "SUCCESS" : random.pick(failures))
        }
        var attempts = [attempt(at: date, successChance: environment == .production ? 0.85 : 0.9)]
        guard attempts[0].result != "SUCCESS", environment == .production else { return attempts }
        var at = date
        for delay in retryDelaysHours {
            at += delay * HistoryGenerator.hour
            guard at <= now else { break }
            attempts.append(attempt(at: at, successChance: 0.55))
            if attempts.last?.result == "SUCCESS" { break }
        }
        return attempts
    }
}
