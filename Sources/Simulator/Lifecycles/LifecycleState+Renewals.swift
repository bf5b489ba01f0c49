/// The events of the subscription's own life: purchase, renewal, billing failure and recovery, auto-renew, product
/// changes, price increases and expiry. Each checks that it can happen now, changes the purchaser's record, lets
/// family members follow (`followPurchaser`) and names the notifications to send.
extension LifecycleState {
    /// Upgrade, downgrade or cross-grade (DID_CHANGE_RENEWAL_PREF).
    enum ProductChange: String {
        case upgrade, downgrade, crossgrade
    }

    mutating func buy(_ reference: String, offer: LifecycleOffer?) throws(LifecycleStepError) -> [PendingNotification] {
        let product = try autoRenewable(reference)
        var subtype = "INITIAL_BUY"
        var recentStart = now
        if let existing = subscription {
            guard existing.status(at: now) == 2 else {
                throw LifecycleStepError(
                    "buy: already subscribed (status \(existing.status(at: now))); buy again after it expired")
            }
            guard existing.current.subscriptionGroupIdentifier == product.subscriptionGroupIdentifier else {
                throw LifecycleStepError("buy: a lifecycle follows one subscription group")
            }
            subtype = "RESUBSCRIBE"
            if let end = existing.current.expiresDate, now - end < LifecycleCalendar.continuityLapse {
                recentStart = existing.renewal.recentSubscriptionStartDate
            }
        }
        var transaction = makeTransaction(
            product, originalTransactionId: subscription?.originalTransactionId,
            originalPurchaseDate: subscription?.current.originalPurchaseDate, reason: "PURCHASE")
        var length = LifecycleCalendar.period(of: product)
        switch offer {
        case .freeTrial?:
            (transaction.offerType, transaction.offerDiscountType, transaction.offerPeriod) = (1, "FREE_TRIAL", "P1W")
            transaction.price = 0
            length = LifecycleCalendar.freeTrial
        case .introductory?:
            (transaction.offerType, transaction.offerDiscountType) = (1, "PAY_AS_YOU_GO")
            transaction.offerPeriod = LifecycleCalendar.offerPeriod(of: product)
            transaction.price = Self.rounded(product.priceMilliunits / 2)
        case .promotional?:
            (transaction.offerType, transaction.offerDiscountType) = (2, "PAY_AS_YOU_GO")
            transaction.offerIdentifier = "\(bundleId).promo.welcome"
            transaction.offerPeriod = LifecycleCalendar.offerPeriod(of: product)
            transaction.price = Self.rounded(product.priceMilliunits / 2)
        case .offerCode?:
            (transaction.offerType, transaction.offerDiscountType) = (3, "PAY_UP_FRONT")
            transaction.offerIdentifier = "WELCOME-CODE"
            transaction.offerPeriod = LifecycleCalendar.offerPeriod(of: product)
            transaction.price = Self.rounded(product.priceMilliunits * 7 / 10)
        case nil:
            break
        }
        transaction.expiresDate = now + length
        let renewal = SimulatedRenewalInfo(
            originalTransactionId: transaction.originalTransactionId,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier ?? "", productId: product.productId,
            autoRenewProductId: product.productId, autoRenewStatus: 1, expirationIntent: nil,
            isInBillingRetryPeriod: false, gracePeriodExpiresDate: nil, offerType: nil, offerIdentifier: nil,
            offerDiscountType: nil, environment: environment, recentSubscriptionStartDate: recentStart,
            renewalDate: transaction.expiresDate, renewalPrice: product.priceMilliunits, currency: Self.currency,
            appAccountToken: appAccountToken, appTransactionId: appTransactionId, status: 1)
        var record = subscription ?? SubscriptionRecord(transactions: [], renewal: renewal)
        record.transactions.append(transaction)
        record.renewal = renewal
        subscription = record
        let type = offer == .promotional || offer == .offerCode ? "OFFER_REDEEMED" : "SUBSCRIBED"
        return [notice(type, subtype, transaction, record)] + followPurchaser(type, subtype, newTransaction: true)
    }

    mutating func renew() throws(LifecycleStepError) -> [PendingNotification] {
        var record = try renewable("renew")
        guard record.renewal.priceIncreaseStatus != 0 else {
            throw LifecycleStepError("renew: a price increase awaits consent (acceptPriceIncrease, or expire)")
        }
        let product = try autoRenewable(record.renewal.autoRenewProductId)
        let end = record.current.expiresDate ?? now
        var transaction = makeTransaction(
            product, originalTransactionId: record.originalTransactionId,
            originalPurchaseDate: record.current.originalPurchaseDate, reason: "RENEWAL")
        transaction.price = record.renewal.renewalPrice ?? product.priceMilliunits
        transaction.expiresDate = end + LifecycleCalendar.period(of: product)
        record.transactions.append(transaction)
        record.renewal.productId = product.productId
        record.renewal.renewalDate = transaction.expiresDate
        record.renewal.priceIncreaseStatus = nil
        subscription = record
        return [notice("DID_RENEW", nil, transaction, record)] + followPurchaser("DID_RENEW", nil, newTransaction: true)
    }

    mutating func failToRenew(gracePeriod: Bool) throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("failToRenew")
        guard let end = record.current.expiresDate, record.current.revocationDate == nil,
            record.renewal.isInBillingRetryPeriod != true, record.renewal.autoRenewStatus == 1
        else {
            throw LifecycleStepError("failToRenew: needs an auto-renewing subscription that is not in billing retry")
        }
        guard now >= end, now - end < LifecycleCalendar.billingRetry else {
            throw LifecycleStepError("failToRenew: billing fails when the period ends (advance: expiry)")
        }
        record.renewal.isInBillingRetryPeriod = true
        record.renewal.expirationIntent = 2
        record.renewal.gracePeriodExpiresDate = gracePeriod ? end + LifecycleCalendar.gracePeriod : nil
        subscription = record
        let subtype = gracePeriod ? "GRACE_PERIOD" : nil
        return [notice("DID_FAIL_TO_RENEW", subtype, record.current, record)]
            + followPurchaser("DID_FAIL_TO_RENEW", subtype, newTransaction: false)
    }

    mutating func expireGracePeriod() throws(LifecycleStepError) -> [PendingNotification] {
        let record = try subscriptionRecord("expireGracePeriod")
        guard record.renewal.isInBillingRetryPeriod == true, let grace = record.renewal.gracePeriodExpiresDate else {
            throw LifecycleStepError("expireGracePeriod: the subscription is not in a billing grace period")
        }
        guard now >= grace else {
            throw LifecycleStepError("expireGracePeriod: the grace period has not ended (advance: gracePeriodEnd)")
        }
        return [notice("GRACE_PERIOD_EXPIRED", nil, record.current, record)]
            + followPurchaser("GRACE_PERIOD_EXPIRED", nil, newTransaction: false)
    }

    mutating func recover() throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("recover")
        guard record.renewal.isInBillingRetryPeriod == true, record.current.revocationDate == nil,
            record.renewal.autoRenewStatus == 1
        else { throw LifecycleStepError("recover: the subscription is not in billing retry with auto-renew on") }
        let product = try autoRenewable(record.renewal.autoRenewProductId)
        // Recovery starts a new billing period now (Apple moves the renewal date to the recovery).
        var transaction = makeTransaction(
            product, originalTransactionId: record.originalTransactionId,
            originalPurchaseDate: record.current.originalPurchaseDate, reason: "RENEWAL")
        transaction.price = record.renewal.renewalPrice ?? product.priceMilliunits
        transaction.expiresDate = now + LifecycleCalendar.period(of: product)
        record.transactions.append(transaction)
        record.renewal.productId = product.productId
        record.renewal.isInBillingRetryPeriod = false
        record.renewal.expirationIntent = nil
        record.renewal.gracePeriodExpiresDate = nil
        record.renewal.renewalDate = transaction.expiresDate
        subscription = record
        return [notice("DID_RENEW", "BILLING_RECOVERY", transaction, record)]
            + followPurchaser("DID_RENEW", "BILLING_RECOVERY", newTransaction: true)
    }

    mutating func setAutoRenew(_ on: Bool) throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord(on ? "enableAutoRenew" : "disableAutoRenew")
        let status = record.status(at: now)
        guard status != 2, status != 5 else {
            throw LifecycleStepError("auto-renew: the subscription is \(status == 2 ? "expired" : "revoked")")
        }
        guard record.renewal.autoRenewStatus == (on ? 0 : 1) else {
            throw LifecycleStepError("auto-renew is already \(on ? "on" : "off")")
        }
        record.renewal.autoRenewStatus = on ? 1 : 0
        subscription = record
        let subtype = on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED"
        return [notice("DID_CHANGE_RENEWAL_STATUS", subtype, record.current, record)]
            + followPurchaser("DID_CHANGE_RENEWAL_STATUS", subtype, newTransaction: false)
    }

    /// Apple's rules (DID_CHANGE_RENEWAL_PREF): an upgrade, or a cross-grade to a product of the same period length,
    /// takes effect at once; a downgrade, or a cross-grade to another period length, at the next renewal.
    mutating func changeProduct(to reference: String, as change: ProductChange) throws(LifecycleStepError)
        -> [PendingNotification]
    {
        var record = try subscriptionRecord(change.rawValue)
        guard record.status(at: now) == 1 else {
            throw LifecycleStepError("\(change.rawValue): the subscription is not active")
        }
        let target = try autoRenewable(reference)
        let current = try autoRenewable(record.current.productId)
        guard target.subscriptionGroupIdentifier == current.subscriptionGroupIdentifier,
            target.productId != current.productId
        else { throw LifecycleStepError("\(change.rawValue): \(reference) is not another product of the group") }
        let fits =
            switch change {
            case .upgrade: target.level < current.level
            case .downgrade: target.level > current.level
            case .crossgrade: target.level == current.level
            }
        guard fits else {
            throw LifecycleStepError(
                "\(change.rawValue): \(target.productId) is level \(target.level), "
                    + "\(current.productId) level \(current.level)")
        }
        record.renewal.autoRenewProductId = target.productId
        record.renewal.renewalPrice = target.priceMilliunits
        record.renewal.priceIncreaseStatus = nil
        guard change == .upgrade || (change == .crossgrade && target.periodMonths == current.periodMonths) else {
            subscription = record
            return [notice("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", record.current, record)]
                + followPurchaser("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", newTransaction: false)
        }
        record.transactions[record.transactions.count - 1].isUpgraded = true
        record.transactions[record.transactions.count - 1].modifiedDate = now
        var transaction = makeTransaction(
            target, originalTransactionId: record.originalTransactionId,
            originalPurchaseDate: record.current.originalPurchaseDate, reason: "PURCHASE")
        transaction.expiresDate = now + LifecycleCalendar.period(of: target)
        record.transactions.append(transaction)
        record.renewal.productId = target.productId
        record.renewal.renewalDate = transaction.expiresDate
        subscription = record
        return [notice("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction, record)]
            + followPurchaser("DID_CHANGE_RENEWAL_PREF", "UPGRADE", newTransaction: true, upgraded: true)
    }

    mutating func announcePriceIncrease() throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("announcePriceIncrease")
        guard record.status(at: now) == 1, record.renewal.autoRenewStatus == 1,
            record.renewal.priceIncreaseStatus == nil
        else {
            throw LifecycleStepError("announcePriceIncrease: needs an active, auto-renewing subscription without one")
        }
        // 20 % more from the next renewal; `renewalPrice` shows the new price at once.
        let price = record.renewal.renewalPrice ?? record.current.price
        record.renewal.renewalPrice = Self.rounded(price * 6 / 5)
        record.renewal.priceIncreaseStatus = 0
        subscription = record
        return [notice("PRICE_INCREASE", "PENDING", record.current, record)]
    }

    mutating func acceptPriceIncrease() throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("acceptPriceIncrease")
        guard record.renewal.priceIncreaseStatus == 0, [1, 3, 4].contains(record.status(at: now)) else {
            throw LifecycleStepError("acceptPriceIncrease: no price increase awaits consent")
        }
        record.renewal.priceIncreaseStatus = 1
        subscription = record
        return [notice("PRICE_INCREASE", "ACCEPTED", record.current, record)]
    }

    /// EXPIRED with the reason the state gives; an auto-renewing subscription in good standing does not expire.
    mutating func expire() throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("expire")
        guard record.current.revocationDate == nil, let end = record.current.expiresDate, now >= end else {
            throw LifecycleStepError("expire: the period has not ended (advance: expiry), or it was revoked")
        }
        let subtype: String
        if record.renewal.isInBillingRetryPeriod == true {
            if let grace = record.renewal.gracePeriodExpiresDate, now < grace {
                throw LifecycleStepError("expire: the billing grace period has not ended")
            }
            subtype = "BILLING_RETRY"
            record.renewal.isInBillingRetryPeriod = false
            record.renewal.expirationIntent = 2
        } else if record.renewal.expirationIntent != nil {
            throw LifecycleStepError("expire: the subscription already expired")
        } else if record.renewal.autoRenewStatus == 0 {
            subtype = "VOLUNTARY"
            record.renewal.expirationIntent = 1
        } else if record.renewal.priceIncreaseStatus == 0 {
            subtype = "PRICE_INCREASE"
            record.renewal.expirationIntent = 3
            record.renewal.autoRenewStatus = 0
        } else {
            throw LifecycleStepError("expire: an auto-renewing subscription renews or fails to (failToRenew first)")
        }
        record.renewal.renewalDate = nil
        subscription = record
        return [notice("EXPIRED", subtype, record.current, record)]
            + followPurchaser("EXPIRED", subtype, newTransaction: false)
    }
}
