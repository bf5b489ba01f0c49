/// The spellings of one of Apple's string enums (Apple's App Store Server API documentation), in the order of
/// the proto enum's numbers: the first is proto number 1 (0 is UNSPECIFIED, for absent and unknown values).
struct PayloadVocabulary: Sendable, Equatable {
    /// Apple's spellings, proto number 1 first.
    let spellings: [String]
    /// Each spelling's proto number.
    let numbers: [String: Int32]

    init(_ spellings: [String]) {
        self.spellings = spellings
        numbers = Dictionary(uniqueKeysWithValues: spellings.enumerated().map { ($0.element, Int32($0.offset) + 1) })
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.spellings == rhs.spellings }

    static let environment = Self(["Production", "Sandbox", "Xcode", "LocalTesting"])
    static let productType = Self([
        "Auto-Renewable Subscription", "Non-Renewing Subscription", "Consumable", "Non-Consumable",
    ])
    static let inAppOwnershipType = Self(["PURCHASED", "FAMILY_SHARED"])
    static let transactionReason = Self(["PURCHASE", "RENEWAL"])
    static let offerDiscountType = Self(["FREE_TRIAL", "PAY_AS_YOU_GO", "PAY_UP_FRONT", "ONE_TIME"])
    static let revocationType = Self(["REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE"])
    static let billingPlanType = Self(["BILLED_UPFRONT", "MONTHLY"])
    static let originalPlatform = Self(["iOS", "macOS", "tvOS", "visionOS"])
    static let consumptionRequestReason = Self([
        "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
    ])
    static let notificationType = Self([
        "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW", "EXPIRED",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "REVOKE", "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "TEST", "ONE_TIME_CHARGE", "RENEWAL_EXTENSION",
        "EXTERNAL_PURCHASE_TOKEN", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
    ])
    static let notificationSubtype = Self([
        "INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED",
        "BILLING_RECOVERY", "VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE", "GRACE_PERIOD",
        "PENDING", "ACCEPTED", "SUMMARY", "FAILURE", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
    ])
}
