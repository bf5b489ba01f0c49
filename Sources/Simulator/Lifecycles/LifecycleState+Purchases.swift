/// Refunds, Family Sharing, renewal extensions and one-time purchases, and the helpers every event uses.
extension LifecycleState {
    static let currency = "USD"
    static let storefront = (country: "USA", id: "143441")

    mutating func refund(_ target: LifecycleRefundTarget) throws(LifecycleStepError) -> [PendingNotification] {
        let (record, index) = try locate(target, "refund")
        var transaction = self.transaction(at: index, of: record)
        guard transaction.revocationDate == nil else {
            throw LifecycleStepError("refund: transaction \(transaction.transactionId) is already revoked")
        }
        transaction.revocationDate = now
        transaction.revocationReason = 0
        transaction.revocationType = "REFUND_FULL"
        transaction.revocationPercentage = 100_000
        transaction.modifiedDate = now
        store(transaction, at: index, of: record)
        guard var owner = subscription, record != nil, owner.current.transactionId == transaction.transactionId else {
            return [notice("REFUND", nil, transaction, record == nil ? nil : subscription)]
        }
        // The current period refunded: access ends, and with it the family's (REVOKE, Apple's documentation).
        owner.autoRenewStatusBeforeRefund = owner.renewal.autoRenewStatus
        owner.renewal.autoRenewStatus = 0
        owner.renewal.renewalDate = nil
        subscription = owner
        return [notice("REFUND", nil, transaction, owner)] + revokeMembers()
    }

    mutating func declineRefund(_ target: LifecycleRefundTarget) throws(LifecycleStepError) -> [PendingNotification] {
        let (record, index) = try locate(target, "declineRefund")
        let transaction = self.transaction(at: index, of: record)
        guard transaction.revocationDate == nil else {
            throw LifecycleStepError("declineRefund: transaction \(transaction.transactionId) is already revoked")
        }
        return [notice("REFUND_DECLINED", nil, transaction, record == nil ? nil : subscription)]
    }

    mutating func reverseRefund(_ target: LifecycleRefundTarget) throws(LifecycleStepError) -> [PendingNotification] {
        let (record, index) = try locate(target, "reverseRefund")
        var transaction = self.transaction(at: index, of: record)
        guard transaction.revocationDate != nil, transaction.revocationType != "FAMILY_REVOKE" else {
            throw LifecycleStepError("reverseRefund: transaction \(transaction.transactionId) was not refunded")
        }
        transaction.revocationDate = nil
        transaction.revocationReason = nil
        transaction.revocationType = nil
        transaction.revocationPercentage = nil
        transaction.modifiedDate = now
        store(transaction, at: index, of: record)
        guard var owner = subscription, record != nil else { return [notice("REFUND_REVERSED", nil, transaction, nil)] }
        if owner.current.transactionId == transaction.transactionId {
            owner.renewal.autoRenewStatus = owner.autoRenewStatusBeforeRefund ?? 1
            owner.autoRenewStatusBeforeRefund = nil
            owner.renewal.renewalDate = owner.current.expiresDate
            subscription = owner
        }
        return [notice("REFUND_REVERSED", nil, transaction, owner)]
    }

    mutating func shareWithFamily() throws(LifecycleStepError) -> [PendingNotification] {
        let purchaser = try subscriptionRecord("shareWithFamily")
        guard purchaser.status(at: now) == 1 else {
            throw LifecycleStepError("shareWithFamily: the subscription is not active")
        }
        guard familyMembers.count < Self.maximumFamilyMembers else {
            throw LifecycleStepError("shareWithFamily: a family has at most \(Self.maximumFamilyMembers) members")
        }
        let product = try autoRenewable(purchaser.current.productId)
        let member = identifiers.nextAppTransactionId()
        var transaction = makeTransaction(
            product, originalTransactionId: nil, originalPurchaseDate: nil, reason: "PURCHASE",
            ownership: "FAMILY_SHARED", appTransactionId: member)
        transaction.expiresDate = purchaser.current.expiresDate
        transaction.price = purchaser.current.price
        var renewal = purchaser.renewal
        renewal.originalTransactionId = transaction.transactionId
        renewal.appTransactionId = member
        renewal.appAccountToken = nil
        renewal.recentSubscriptionStartDate = now
        renewal.priceIncreaseStatus = nil
        let record = SubscriptionRecord(transactions: [transaction], renewal: renewal)
        familyMembers.append(record)
        return [notice("SUBSCRIBED", "INITIAL_BUY", transaction, record)]
    }

    mutating func revokeFamilySharing() throws(LifecycleStepError) -> [PendingNotification] {
        let revoked = revokeMembers()
        guard !revoked.isEmpty else { throw LifecycleStepError("revokeFamilySharing: no family member shares it") }
        return revoked
    }

    mutating func extendRenewal(days: Int) throws(LifecycleStepError) -> [PendingNotification] {
        var record = try subscriptionRecord("extendRenewal")
        guard (1...90).contains(days) else { throw LifecycleStepError("extendRenewal: days must be 1…90 (Apple's)") }
        guard record.status(at: now) == 1, let end = record.current.expiresDate else {
            throw LifecycleStepError("extendRenewal: the subscription is not active")
        }
        let extended = end + Int64(days) * LifecycleCalendar.day
        record.transactions[record.transactions.count - 1].expiresDate = extended
        record.transactions[record.transactions.count - 1].modifiedDate = now
        if record.renewal.renewalDate != nil { record.renewal.renewalDate = extended }
        subscription = record
        return [notice("RENEWAL_EXTENDED", nil, record.current, record)]
            + followPurchaser("RENEWAL_EXTENDED", nil, newTransaction: false)
    }

    mutating func purchase(_ reference: String) throws(LifecycleStepError) -> [PendingNotification] {
        guard let product = product(reference), product.kind != .autoRenewable else {
            throw LifecycleStepError("purchase: \(reference) is not a one-time product of \(bundleId)")
        }
        if product.kind == .nonConsumable,
            purchases.contains(where: { $0.productId == product.productId && $0.revocationDate == nil })
        {
            throw LifecycleStepError("purchase: \(product.productId) is already owned")
        }
        let transaction = makeTransaction(
            product, originalTransactionId: nil, originalPurchaseDate: nil, reason: "PURCHASE")
        purchases.append(transaction)
        return [notice("ONE_TIME_CHARGE", nil, transaction, nil)]
    }

    // MARK: Helpers

    /// REVOKE for every member still sharing (`FAMILY_REVOKE`, access ends for them only).
    private mutating func revokeMembers() -> [PendingNotification] {
        var pending: [PendingNotification] = []
        for index in familyMembers.indices where familyMembers[index].current.revocationDate == nil {
            var member = familyMembers[index]
            let last = member.transactions.count - 1
            member.transactions[last].revocationDate = now
            member.transactions[last].revocationType = "FAMILY_REVOKE"
            member.transactions[last].modifiedDate = now
            member.renewal.autoRenewStatus = 0
            member.renewal.renewalDate = nil
            familyMembers[index] = member
            pending.append(notice("REVOKE", nil, member.current, member))
        }
        return pending
    }

    /// Members still sharing follow the purchaser's change, with the same notification: a new transaction of their
    /// own (same product and dates, FAMILY_SHARED) when the purchaser got one, else their current one ending when the
    /// purchaser's does (an extension moves both), and the purchaser's renewal state.
    mutating func followPurchaser(_ type: String, _ subtype: String?, newTransaction: Bool, upgraded: Bool = false)
        -> [PendingNotification]
    {
        guard let purchaser = subscription else { return [] }
        var pending: [PendingNotification] = []
        for index in familyMembers.indices where familyMembers[index].current.revocationDate == nil {
            var member = familyMembers[index]
            if newTransaction {
                if upgraded {
                    member.transactions[member.transactions.count - 1].isUpgraded = true
                    member.transactions[member.transactions.count - 1].modifiedDate = now
                }
                var transaction = purchaser.current
                transaction.transactionId = identifiers.nextTransactionId()
                transaction.webOrderLineItemId = identifiers.nextWebOrderLineItemId()
                transaction.originalTransactionId = member.originalTransactionId
                transaction.originalPurchaseDate = member.current.originalPurchaseDate
                transaction.inAppOwnershipType = "FAMILY_SHARED"
                transaction.appAccountToken = nil
                transaction.appTransactionId = member.renewal.appTransactionId
                (transaction.offerType, transaction.offerIdentifier) = (nil, nil)
                (transaction.offerDiscountType, transaction.offerPeriod) = (nil, nil)
                member.transactions.append(transaction)
            } else if member.current.expiresDate != purchaser.current.expiresDate {
                member.transactions[member.transactions.count - 1].expiresDate = purchaser.current.expiresDate
                member.transactions[member.transactions.count - 1].modifiedDate = now
            }
            var renewal = purchaser.renewal
            renewal.originalTransactionId = member.originalTransactionId
            renewal.appTransactionId = member.renewal.appTransactionId
            renewal.appAccountToken = nil
            renewal.recentSubscriptionStartDate = member.renewal.recentSubscriptionStartDate
            renewal.priceIncreaseStatus = nil
            member.renewal = renewal
            familyMembers[index] = member
            pending.append(notice(type, subtype, member.current, member))
        }
        return pending
    }

    func notice(_ type: String, _ subtype: String?, _ transaction: SimulatedTransaction, _ record: SubscriptionRecord?)
        -> PendingNotification
    {
        PendingNotification(
            type: type, subtype: subtype, transactionId: transaction.transactionId,
            originalTransactionId: record?.originalTransactionId)
    }

    func subscriptionRecord(_ action: String) throws(LifecycleStepError) -> SubscriptionRecord {
        guard let subscription else { throw LifecycleStepError("\(action): nothing was subscribed to yet (buy)") }
        return subscription
    }

    /// The record, if it can renew now: auto-renew on, not revoked, not in billing retry, within the 24 hours
    /// before the period ends.
    func renewable(_ action: String) throws(LifecycleStepError) -> SubscriptionRecord {
        let record = try subscriptionRecord(action)
        guard let end = record.current.expiresDate, record.current.revocationDate == nil,
            record.renewal.isInBillingRetryPeriod != true, record.renewal.autoRenewStatus == 1
        else {
            throw LifecycleStepError("\(action): needs an auto-renewing subscription that is not in billing retry")
        }
        guard now <= end, end - now <= LifecycleCalendar.renewalWindow else {
            throw LifecycleStepError(
                "\(action): a renewal happens in the 24 hours before the period ends (advance: expiry)")
        }
        return record
    }

    func autoRenewable(_ reference: String) throws(LifecycleStepError) -> SimulatedProduct {
        guard let product = product(reference), product.kind == .autoRenewable else {
            throw LifecycleStepError("\(reference) is not an auto-renewable subscription of \(bundleId)")
        }
        return product
    }

    /// A new transaction of `product` at `now`, of the purchaser unless told otherwise.
    mutating func makeTransaction(
        _ product: SimulatedProduct, originalTransactionId: String?, originalPurchaseDate: Int64?, reason: String,
        ownership: String = "PURCHASED", appTransactionId: String? = nil
    ) -> SimulatedTransaction {
        let transactionId = identifiers.nextTransactionId()
        let purchaser = appTransactionId == nil
        return SimulatedTransaction(
            transactionId: transactionId, originalTransactionId: originalTransactionId ?? transactionId,
            webOrderLineItemId: product.kind == .autoRenewable ? identifiers.nextWebOrderLineItemId() : nil,
            bundleId: bundleId, productId: product.productId, kind: product.kind,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier, purchaseDate: now,
            originalPurchaseDate: originalPurchaseDate ?? now, expiresDate: nil, quantity: 1,
            appAccountToken: purchaser ? appAccountToken : nil, inAppOwnershipType: ownership, revocationReason: nil,
            revocationDate: nil, revocationType: nil, revocationPercentage: nil, isUpgraded: false, offerType: nil,
            offerIdentifier: nil, offerDiscountType: nil, offerPeriod: nil, environment: environment,
            storefront: Self.storefront.country, storefrontId: Self.storefront.id, transactionReason: reason,
            currency: Self.currency, price: product.priceMilliunits,
            appTransactionId: appTransactionId ?? self.appTransactionId, isFinished: true, modifiedDate: now)
    }

    /// A price in milliunits rounded to a cent (10 milliunits).
    static func rounded(_ milliunits: Int64) -> Int64 { (milliunits + 5) / 10 * 10 }

    /// Where a refund target is: the purchaser's subscription (`record` true) or the one-time purchases, and the
    /// index there.
    private func locate(_ target: LifecycleRefundTarget, _ action: String) throws(LifecycleStepError) -> (
        record: SubscriptionRecord?, index: Int
    ) {
        switch target {
        case .purchase(let reference):
            let productId = product(reference)?.productId ?? reference
            guard let index = purchases.lastIndex(where: { $0.productId == productId }) else {
                throw LifecycleStepError("\(action): \(reference) was never purchased")
            }
            return (nil, index)
        case .currentPeriod:
            let record = try subscriptionRecord(action)
            return (record, record.transactions.count - 1)
        case .period(let number):
            let record = try subscriptionRecord(action)
            guard (1...record.transactions.count).contains(number) else {
                throw LifecycleStepError("\(action): period must be 1…\(record.transactions.count)")
            }
            return (record, number - 1)
        }
    }

    private func transaction(at index: Int, of record: SubscriptionRecord?) -> SimulatedTransaction {
        record.map { $0.transactions[index] } ?? purchases[index]
    }

    private mutating func store(_ transaction: SimulatedTransaction, at index: Int, of record: SubscriptionRecord?) {
        if record != nil {
            subscription?.transactions[index] = transaction
        } else {
            purchases[index] = transaction
        }
    }
}
