import AppStoreDomain

/// One transaction as the App Store keeps it: the decoded `JWSTransactionDecodedPayload` fields
/// (Apple's App Store Server API documentation) plus what the simulator needs to page and filter it.
public struct SimulatedTransaction: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var bundleId: String
    public var productId: String
    public var kind: SimulatedProduct.Kind
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64
    public var expiresDate: Int64?
    public var quantity: Int
    public var appAccountToken: String?
    public var inAppOwnershipType: String
    public var revocationReason: Int?
    public var revocationDate: Int64?
    public var revocationType: String?
    public var revocationPercentage: Int?
    public var isUpgraded: Bool
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var environment: AppleEnvironment
    public var storefront: String
    public var storefrontId: String
    public var transactionReason: String
    public var currency: String
    public var price: Int64
    public var appTransactionId: String
    /// Consumables the app has finished (Get Transaction History V1 leaves them out).
    public var isFinished: Bool
    /// When the record last changed: the history's ordering key.
    public var modifiedDate: Int64
    /// `billingPlanType` of a 12-month commitment plan.
    public var billingPlanType: String? = nil
    /// `commitmentInfo` of a commitment plan.
    public var commitmentInfo: OrderedJSON? = nil
    /// `advancedCommerceInfo` of an Advanced Commerce API purchase.
    public var advancedCommerceInfo: OrderedJSON? = nil

    /// Whether the transaction was refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil }

    /// The `productType` filter value.
    public var productType: TransactionHistoryQuery.ProductType { kind.historyFilterType }

    /// The decoded JWS payload, signed at `signedDate`.
    public func payload(signedDate: Int64) -> OrderedJSON {
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
public struct SimulatedRenewalInfo: Sendable, Hashable {
    public var originalTransactionId: String
    public var subscriptionGroupIdentifier: String
    public var productId: String
    public var autoRenewProductId: String
    public var autoRenewStatus: Int
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var environment: AppleEnvironment
    public var recentSubscriptionStartDate: Int64
    public var renewalDate: Int64?
    public var renewalPrice: Int64?
    public var currency: String
    public var appAccountToken: String?
    public var appTransactionId: String
    public var status: Int
    /// `priceIncreaseStatus` while a price increase is pending or accepted.
    public var priceIncreaseStatus: Int? = nil
    /// `eligibleWinBackOfferIds` after the subscription expired.
    public var eligibleWinBackOfferIds: [String]? = nil
    /// `offerPeriod` of the offer at the next renewal.
    public var offerPeriod: String? = nil
    /// `renewalBillingPlanType` and `commitmentInfo` of a commitment plan.
    public var renewalBillingPlanType: String? = nil
    public var commitmentInfo: OrderedJSON? = nil
    /// `advancedCommerceInfo` of an Advanced Commerce API subscription.
    public var advancedCommerceInfo: OrderedJSON? = nil

    /// The decoded JWS payload, signed at `signedDate`.
    public func payload(signedDate: Int64) -> OrderedJSON {
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
public struct SimulatedSendAttempt: Sendable, Hashable {
    public var attemptDate: Int64
    public var result: String
}

/// One App Store Server Notification V2 with its delivery history.
public struct SimulatedNotification: Sendable, Hashable {
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    /// When the event happened (the first send attempt and the history's date filter).
    public var date: Int64
    /// The transaction the notification is about (nil for TEST).
    public var transactionId: String?
    public var originalTransactionId: String?
    /// Delivery tries, oldest first, only those not in the future.
    public var sendAttempts: [SimulatedSendAttempt]
    /// `data.consumptionRequestReason` (CONSUMPTION_REQUEST).
    public var consumptionRequestReason: String? = nil
    /// A payload other than `data`: `summary`, `externalPurchaseToken` or `appData` (nil: `data`).
    public var otherPayload: OtherPayload? = nil

    /// The notification payloads that are not `data`.
    public enum OtherPayload: Sendable, Hashable {
        /// `summary` of a mass renewal extension (RENEWAL_EXTENSION / SUMMARY).
        case summary(OrderedJSON)
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
        case externalPurchaseToken(OrderedJSON)
        /// `appData` with this AppTransaction payload signed as `signedAppTransactionInfo` (RESCIND_CONSENT).
        case appData(appTransaction: OrderedJSON)
    }

    /// Whether no try reached the developer's server.
    public var neverDelivered: Bool { !sendAttempts.contains { $0.result == "SUCCESS" } }
}

/// One customer (one Apple Account) of one app in one environment.
public struct SimulatedCustomer: Sendable, Hashable {
    public var index: Int
    public var appTransactionId: String
    /// Every transaction, in purchase order.
    public var transactions: [SimulatedTransaction]
    /// Renewal info per auto-renewable subscription (one per original transaction).
    public var renewals: [SimulatedRenewalInfo]
    public var notifications: [SimulatedNotification]
}
