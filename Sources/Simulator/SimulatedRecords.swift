import AppStoreDomain

/// One transaction as the App Store keeps it: the decoded `JWSTransactionDecodedPayload` fields
/// (Apple's App Store Server API documentation) plus what the simulator needs to page and filter it.
package struct SimulatedTransaction: Sendable, Hashable {
    package var transactionId: String
    package var originalTransactionId: String
    package var webOrderLineItemId: String?
    package var bundleId: String
    package var productId: String
    package var kind: SimulatedProduct.Kind
    package var subscriptionGroupIdentifier: String?
    package var purchaseDate: Int64
    package var originalPurchaseDate: Int64
    package var expiresDate: Int64?
    package var quantity: Int
    package var appAccountToken: String?
    package var inAppOwnershipType: String
    package var revocationReason: Int?
    package var revocationDate: Int64?
    package var revocationType: String?
    package var revocationPercentage: Int?
    package var isUpgraded: Bool
    package var offerType: Int?
    package var offerIdentifier: String?
    package var offerDiscountType: String?
    package var offerPeriod: String?
    package var environment: AppleEnvironment
    package var storefront: String
    package var storefrontId: String
    package var transactionReason: String
    package var currency: String
    package var price: Int64
    package var appTransactionId: String
    /// Consumables the app has finished (Get Transaction History V1 leaves them out).
    package var isFinished: Bool
    /// When the record last changed: the history's ordering key.
    package var modifiedDate: Int64
    /// `billingPlanType` of a 12-month commitment plan.
    package var billingPlanType: String? = nil
    /// `commitmentInfo` of a commitment plan.
    package var commitmentInfo: OrderedJSON? = nil
    /// `advancedCommerceInfo` of an Advanced Commerce API purchase.
    package var advancedCommerceInfo: OrderedJSON? = nil

    /// Whether the transaction was refunded or revoked.
    package var isRevoked: Bool { revocationDate != nil }

    /// The `productType` filter value.
    package var productType: TransactionHistoryQuery.ProductType { kind.historyFilterType }

    /// The decoded JWS payload, signed at `signedDate`.
    package func payload(signedDate: Int64) -> OrderedJSON {
        var json = JSONObjectBuilder()
        json.add("transactionId", transactionId)
        json.add("originalTransactionId", originalTransactionId)
        json.add("webOrderLineItemId", webOrderLineItemId)
        json.add("bundleId", bundleId)
        json.add("productId", productId)
        json.add("subscriptionGroupIdentifier", subscriptionGroupIdentifier)
        json.add("purchaseDate", purchaseDate)
        json.add("originalPurchaseDate", originalPurchaseDate)
        json.add("expiresDate", expiresDate)
        json.add("quantity", quantity)
        json.add("type", kind.rawValue)
        json.add("appAccountToken", appAccountToken)
        json.add("inAppOwnershipType", inAppOwnershipType)
        json.add("signedDate", signedDate)
        json.add("revocationReason", revocationReason)
        json.add("revocationDate", revocationDate)
        json.add("isUpgraded", isUpgraded ? true : nil)
        json.add("offerType", offerType)
        json.add("offerIdentifier", offerIdentifier)
        json.add("environment", environment.appleName)
        json.add("transactionReason", transactionReason)
        json.add("storefront", storefront)
        json.add("storefrontId", storefrontId)
        json.add("price", price)
        json.add("currency", currency)
        json.add("offerDiscountType", offerDiscountType)
        json.add("appTransactionId", appTransactionId)
        json.add("offerPeriod", offerPeriod)
        json.add("revocationType", revocationType)
        json.add("revocationPercentage", revocationPercentage)
        json.add("billingPlanType", billingPlanType)
        json.add("commitmentInfo", commitmentInfo)
        json.add("advancedCommerceInfo", advancedCommerceInfo)
        return json.object
    }
}

/// The renewal state of one auto-renewable subscription (`JWSRenewalInfoDecodedPayload`, Apple's documentation) and
/// its Get All Subscription Statuses `status` (1 active, 2 expired, 3 billing retry, 4 grace, 5 revoked).
package struct SimulatedRenewalInfo: Sendable, Hashable {
    package var originalTransactionId: String
    package var subscriptionGroupIdentifier: String
    package var productId: String
    package var autoRenewProductId: String
    package var autoRenewStatus: Int
    package var expirationIntent: Int?
    package var isInBillingRetryPeriod: Bool?
    package var gracePeriodExpiresDate: Int64?
    package var offerType: Int?
    package var offerIdentifier: String?
    package var offerDiscountType: String?
    package var environment: AppleEnvironment
    package var recentSubscriptionStartDate: Int64
    package var renewalDate: Int64?
    package var renewalPrice: Int64?
    package var currency: String
    package var appAccountToken: String?
    package var appTransactionId: String
    package var status: Int
    /// `priceIncreaseStatus` while a price increase is pending or accepted.
    package var priceIncreaseStatus: Int? = nil
    /// `eligibleWinBackOfferIds` after the subscription expired.
    package var eligibleWinBackOfferIds: [String]? = nil
    /// `offerPeriod` of the offer at the next renewal.
    package var offerPeriod: String? = nil
    /// `renewalBillingPlanType` and `commitmentInfo` of a commitment plan.
    package var renewalBillingPlanType: String? = nil
    package var commitmentInfo: OrderedJSON? = nil
    /// `advancedCommerceInfo` of an Advanced Commerce API subscription.
    package var advancedCommerceInfo: OrderedJSON? = nil

    /// The decoded JWS payload, signed at `signedDate`.
    package func payload(signedDate: Int64) -> OrderedJSON {
        var json = JSONObjectBuilder()
        json.add("originalTransactionId", originalTransactionId)
        json.add("autoRenewProductId", autoRenewProductId)
        json.add("productId", productId)
        json.add("autoRenewStatus", autoRenewStatus)
        json.add("expirationIntent", expirationIntent)
        json.add("isInBillingRetryPeriod", isInBillingRetryPeriod)
        json.add("gracePeriodExpiresDate", gracePeriodExpiresDate)
        json.add("offerType", offerType)
        json.add("offerIdentifier", offerIdentifier)
        json.add("signedDate", signedDate)
        json.add("environment", environment.appleName)
        json.add("recentSubscriptionStartDate", recentSubscriptionStartDate)
        json.add("renewalDate", renewalDate)
        json.add("renewalPrice", renewalPrice)
        json.add("currency", currency)
        json.add("offerDiscountType", offerDiscountType)
        json.add("appAccountToken", appAccountToken)
        json.add("appTransactionId", appTransactionId)
        json.add("priceIncreaseStatus", priceIncreaseStatus)
        json.add("eligibleWinBackOfferIds", eligibleWinBackOfferIds.map { .array($0.map(OrderedJSON.string)) })
        json.add("offerPeriod", offerPeriod)
        json.add("renewalBillingPlanType", renewalBillingPlanType)
        json.add("commitmentInfo", commitmentInfo)
        json.add("advancedCommerceInfo", advancedCommerceInfo)
        return json.object
    }
}

/// One delivery try of a notification.
package struct SimulatedSendAttempt: Sendable, Hashable {
    package var attemptDate: Int64
    package var result: String
}

/// One App Store Server Notification V2 with its delivery history.
package struct SimulatedNotification: Sendable, Hashable {
    package var notificationUUID: String
    package var notificationType: String
    package var subtype: String?
    /// When the event happened (the first send attempt and the history's date filter).
    package var date: Int64
    /// The transaction the notification is about (nil for TEST).
    package var transactionId: String?
    package var originalTransactionId: String?
    /// Delivery tries, oldest first, only those not in the future.
    package var sendAttempts: [SimulatedSendAttempt]
    /// `data.consumptionRequestReason` (CONSUMPTION_REQUEST).
    package var consumptionRequestReason: String? = nil
    /// A payload other than `data`: `summary`, `externalPurchaseToken` or `appData` (nil: `data`).
    package var otherPayload: OtherPayload? = nil

    /// The notification payloads that are not `data`.
    package enum OtherPayload: Sendable, Hashable {
        /// `summary` of a mass renewal extension (RENEWAL_EXTENSION / SUMMARY).
        case summary(OrderedJSON)
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
        case externalPurchaseToken(OrderedJSON)
        /// `appData` with this AppTransaction payload signed as `signedAppTransactionInfo` (RESCIND_CONSENT).
        case appData(appTransaction: OrderedJSON)
    }

    /// Whether no try reached the developer's server.
    package var neverDelivered: Bool { !sendAttempts.contains { $0.result == "SUCCESS" } }
}

/// One customer (one Apple Account) of one app in one environment.
package struct SimulatedCustomer: Sendable, Hashable {
    package var index: Int
    package var appTransactionId: String
    /// Every transaction, in purchase order.
    package var transactions: [SimulatedTransaction]
    /// Renewal info per auto-renewable subscription (one per original transaction).
    package var renewals: [SimulatedRenewalInfo]
    package var notifications: [SimulatedNotification]
}
