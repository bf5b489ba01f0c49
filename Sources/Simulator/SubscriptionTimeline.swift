import AppStoreDomain

/// How a generated auto-renewable subscription ends up at the reference time.
enum SubscriptionOutcome: CaseIterable {
    case active, voluntaryExpiry, billingRetry, gracePeriod, refunded, familyRevoked
}

extension HistoryGenerator {
    /// Length of one billing period. Sandbox compresses time as Apple's does: a month renews every
    /// 5 minutes, a year every hour.
    func periodLength(months: Int) -> Int64 {
        if environment == .sandbox { return months >= 12 ? Self.hour : Int64(months) * 5 * 60_000 }
        return Int64(months) * 30 * Self.day + (months >= 12 ? 5 * Self.day : 0)
    }

    /// Apple stops sandbox renewals after 12.
    var maximumRenewals: Int { environment == .sandbox ? 12 : Int.max }

    /// One subscription in `group`: an introductory or code offer, renewals, maybe a promotional offer, an
    /// upgrade or downgrade, and an outcome (active, expired, billing retry, grace period, refund, revocation).
    mutating func subscription(
        group: String, longLived: Bool, random: inout DeterministicRandom, context: inout PurchaseContext
    ) {
        let groupProducts = catalog.products.filter { $0.subscriptionGroupIdentifier == group }
        guard var product = groupProducts.first else { return }
        if !longLived, groupProducts.count > 1 {
            let roll = random.int(0...99)
            product = groupProducts[roll < 55 ? 0 : (roll < 85 ? 1 : 2)]
        }
        var outcome: SubscriptionOutcome =
            longLived
            ? .active
            : random.pick([
                .active, .active, .active, .voluntaryExpiry, .voluntaryExpiry, .billingRetry, .gracePeriod, .refunded,
            ])
        if context.ownership == "FAMILY_SHARED", random.chance(0.3) { outcome = .familyRevoked }
        let start =
            longLived
            ? referenceTime - periodLength(months: 1) * 30 - Self.day
            : referenceTime - Int64(random.int(1...Int(historyWindow() / 60_000))) * 60_000
        let introRoll = random.int(0...99)
        let upgradeAt = product.level == 2 && product.periodMonths == 1 && random.chance(0.2) ? random.int(1...4) : -1
        let promotionAt = random.chance(0.12) ? random.int(2...6) : -1
        var downgradeAt = random.chance(0.3) ? random.int(1...5) : -1

        var periodStart = start
        var originalId: String?
        var renewals = 0
        var last: SimulatedTransaction?
        var autoRenewProduct = product
        while renewals <= maximumRenewals {
            let first = originalId == nil
            var transaction = makeTransaction(
                product: product, purchaseDate: periodStart, originalPurchaseDate: start,
                originalTransactionId: originalId, reason: first ? "PURCHASE" : "RENEWAL", context: context)
            var length = periodLength(months: product.periodMonths)
            if first, introRoll < 30 {
                transaction.offerType = 1
                transaction.offerDiscountType = "FREE_TRIAL"
                transaction.offerPeriod = "P1W"
                transaction.price = 0
                length = environment == .sandbox ? 3 * 60_000 : 7 * Self.day
            } else if introRoll >= 30, introRoll < 45, renewals < 3, product.periodMonths == 1 {
                transaction.offerType = 1
                transaction.offerDiscountType = "PAY_AS_YOU_GO"
                transaction.offerPeriod = "P3M"
                transaction.price /= 2
            } else if first, introRoll >= 45, introRoll < 55 {
                transaction.offerType = 3
                transaction.offerIdentifier = "WELCOME-CODE-2025"
                transaction.offerDiscountType = "PAY_UP_FRONT"
                transaction.offerPeriod = product.periodMonths == 12 ? "P1Y" : "P1M"
                transaction.price = transaction.price * 7 / 10
            } else if renewals == promotionAt {
                transaction.offerType = 2
                transaction.offerIdentifier = "\(bundleId).promo.comeback"
                transaction.offerDiscountType = "PAY_AS_YOU_GO"
                transaction.offerPeriod = "P1M"
                transaction.price /= 2
            }
            transaction.expiresDate = periodStart + length
            originalId = originalId ?? transaction.transactionId
            let type = first ? (transaction.offerType == 3 ? "OFFER_REDEEMED" : "SUBSCRIBED") : "DID_RENEW"
            context.notifications.append(
                notification(type, first ? "INITIAL_BUY" : nil, at: periodStart, transaction, random: &random))

            if renewals == upgradeAt,
                let higher = catalog.products.first(where: {
                    $0.subscriptionGroupIdentifier == group && $0.level < product.level && $0.periodMonths == 1
                }), periodStart + length / 3 < referenceTime
            {
                // An upgrade takes effect at once: this period is cut short and refunded pro rata.
                let upgradeDate = periodStart + length / 3
                transaction.isUpgraded = true
                transaction.modifiedDate = upgradeDate
                context.transactions.append(transaction)
                product = higher
                autoRenewProduct = higher
                context.notifications.append(
                    notification("DID_CHANGE_RENEWAL_PREF", "UPGRADE", at: upgradeDate, transaction, random: &random))
                periodStart = upgradeDate
                renewals += 1
                downgradeAt = renewals + 1
                continue
            }
            last = transaction
            context.transactions.append(transaction)
            let periodEnd = periodStart + length
            if renewals == downgradeAt, product.level == 1, let lower = groupProducts.first(where: { $0.level == 2 }),
                periodStart + length / 2 < referenceTime
            {
                // A downgrade waits for the next renewal.
                autoRenewProduct = lower
                context.notifications.append(
                    notification(
                        "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", at: periodStart + length / 2, transaction,
                        random: &random))
            }
            let nextWouldStartInFuture = periodEnd > referenceTime
            let billingFails = outcome == .billingRetry || outcome == .gracePeriod
            // A failed renewal: usually the latest one (so some are still in grace or billing retry),
            // sometimes an older one (billing retry ran out and the subscription expired).
            let failsNow =
                billingFails && periodEnd <= referenceTime
                && (periodEnd + periodLength(months: autoRenewProduct.periodMonths) > referenceTime
                    || random.chance(0.05))
            let stopEarly =
                (outcome == .voluntaryExpiry && !longLived && renewals >= 1 && random.chance(0.35)) || failsNow
            if nextWouldStartInFuture || stopEarly || renewals == maximumRenewals { break }
            if autoRenewProduct != product { product = autoRenewProduct }
            periodStart = periodEnd
            renewals += 1
        }
        guard let last, let originalId else { return }
        finish(
            last, originalId: originalId, outcome: outcome, autoRenewProduct: autoRenewProduct, start: start,
            random: &random, context: &context)
    }

    /// Applies the outcome to the last transaction and records the renewal info and its notifications.
    private mutating func finish(
        _ lastTransaction: SimulatedTransaction, originalId: String, outcome: SubscriptionOutcome,
        autoRenewProduct: SimulatedProduct, start: Int64, random: inout DeterministicRandom,
        context: inout PurchaseContext
    ) {
        var last = lastTransaction
        let expires = last.expiresDate ?? referenceTime
        var outcome = outcome
        if expires <= referenceTime, outcome == .active { outcome = .voluntaryExpiry }
        if expires > referenceTime, [.voluntaryExpiry, .billingRetry, .gracePeriod].contains(outcome) {
            outcome = .active
        }
        var renewal = SimulatedRenewalInfo(
            originalTransactionId: originalId, subscriptionGroupIdentifier: last.subscriptionGroupIdentifier ?? "",
            productId: last.productId, autoRenewProductId: autoRenewProduct.productId, autoRenewStatus: 1,
            expirationIntent: nil, isInBillingRetryPeriod: nil, gracePeriodExpiresDate: nil, offerType: nil,
            offerIdentifier: nil, offerDiscountType: nil, environment: environment, recentSubscriptionStartDate: start,
            renewalDate: expires, renewalPrice: context.storefront.price(autoRenewProduct.priceMilliunits),
            currency: context.storefront.currency, appAccountToken: context.appAccountToken,
            appTransactionId: context.appTransactionId, status: 1)
        let retryWindow = environment == .sandbox ? Self.hour : 60 * Self.day
        let graceLength = environment == .sandbox ? 10 * 60_000 : 16 * Self.day
        switch outcome {
        case .active:
            renewal.isInBillingRetryPeriod = false
        case .voluntaryExpiry:
            renewal.autoRenewStatus = 0
            renewal.expirationIntent = 1
            renewal.renewalDate = nil
            renewal.status = 2
            let disabledAt = max(last.purchaseDate, expires - (expires - last.purchaseDate) / 3)
            context.notifications.append(
                notification(
                    "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", at: disabledAt, last, random: &random))
            context.notifications.append(notification("EXPIRED", "VOLUNTARY", at: expires, last, random: &random))
        case .billingRetry, .gracePeriod:
            renewal.isInBillingRetryPeriod = true
            renewal.expirationIntent = 2
            renewal.status = 3
            if outcome == .gracePeriod {
                renewal.gracePeriodExpiresDate = expires + graceLength
                context.notifications.append(
                    notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", at: expires, last, random: &random))
                if expires + graceLength > referenceTime {
                    renewal.status = 4
                } else {
                    context.notifications.append(
                        notification("GRACE_PERIOD_EXPIRED", nil, at: expires + graceLength, last, random: &random))
                }
            } else {
                context.notifications.append(notification("DID_FAIL_TO_RENEW", nil, at: expires, last, random: &random))
            }
            if expires + retryWindow <= referenceTime {
                renewal.isInBillingRetryPeriod = false
                renewal.status = 2
                renewal.renewalDate = nil
                context.notifications.append(
                    notification("EXPIRED", "BILLING_RETRY", at: expires + retryWindow, last, random: &random))
            }
        case .refunded, .familyRevoked:
            let revocation = min(referenceTime, last.purchaseDate + max(60_000, (expires - last.purchaseDate) / 4))
            last.revocationDate = revocation
            last.modifiedDate = revocation
            if outcome == .refunded {
                let prorated = random.chance(0.4)
                last.revocationReason = random.int(0...1)
                last.revocationType = prorated ? "REFUND_PRORATED" : "REFUND_FULL"
                last.revocationPercentage = prorated ? random.int(3...8) * 10_000 : 100_000
            } else {
                last.revocationType = "FAMILY_REVOKE"
            }
            renewal.autoRenewStatus = 0
            renewal.renewalDate = nil
            renewal.status = 5
            context.notifications.append(
                notification(
                    outcome == .refunded ? "REFUND" : "REVOKE", nil, at: revocation, last, random: &random))
            if let index = context.transactions.lastIndex(where: { $0.transactionId == last.transactionId }) {
                context.transactions[index] = last
            }
        }
        context.renewals.append(renewal)
    }
}
