import GatewayFoundation
import ProtoCodec

/// Every Apple payload the gateway decodes, described once, field by field (Apple's App Store Server API
/// documentation): each member's JSON name, its kind, and the proto field it fills. `PayloadDecoder` maps a
/// verified payload by applying its table; members the tables do not name are skipped (`raw_json` keeps them).
enum PayloadSchema {
    /// JWSTransactionDecodedPayload → `Transaction`.
    static let transaction: [PayloadField<Transaction>] = [
        .string("transactionId") { $0.transactionId = $1 },
        .string("originalTransactionId") { $0.originalTransactionId = $1 },
        .string("webOrderLineItemId") { $0.webOrderLineItemId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .string("productId") { $0.productId = $1 },
        .string("subscriptionGroupIdentifier") { $0.subscriptionGroupIdentifier = $1 },
        .date("purchaseDate") { ($0.purchaseDate, $0.purchaseDateMillis) = ($1, $2) },
        .date("originalPurchaseDate") { ($0.originalPurchaseDate, $0.originalPurchaseDateMillis) = ($1, $2) },
        .date("expiresDate") { ($0.expiresDate, $0.expiresDateMillis) = ($1, $2) },
        .int32("quantity") { $0.quantity = $1 },
        .enumeration("type", .productType) { ($0.type, $0.typeRaw) = ($1, $2) },
        .string("appAccountToken") { $0.appAccountToken = $1 },
        .enumeration("inAppOwnershipType", .inAppOwnershipType) {
            ($0.inAppOwnershipType, $0.inAppOwnershipTypeRaw) = ($1, $2)
        },
        .date("signedDate") { ($0.signedDate, $0.signedDateMillis) = ($1, $2) },
        .number("revocationReason", offset: 1) { $0.revocationReason = $1 },
        .date("revocationDate") { ($0.revocationDate, $0.revocationDateMillis) = ($1, $2) },
        .optionalBool("isUpgraded") { ($0.isUpgradedValue, $0.isUpgraded) = ($1, $1?.value ?? false) },
        .number("offerType", offset: 0) { $0.offerType = $1 },
        .string("offerIdentifier") { $0.offerIdentifier = $1 },
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
        .string("storefront") { $0.storefront = $1 },
        .string("storefrontId") { $0.storefrontId = $1 },
        .enumeration("transactionReason", .transactionReason) {
            ($0.transactionReason, $0.transactionReasonRaw) = ($1, $2)
        },
        .string("currency") { $0.currency = $1 },
        .int64("price") { $0.priceMilliunits = $1 },
        .enumeration("offerDiscountType", .offerDiscountType) {
            ($0.offerDiscountType, $0.offerDiscountTypeRaw) = ($1, $2)
        },
        .string("appTransactionId") { $0.appTransactionId = $1 },
        .string("offerPeriod") { $0.offerPeriod = $1 },
        .enumeration("revocationType", .revocationType) { ($0.revocationType, $0.revocationTypeRaw) = ($1, $2) },
        .int32("revocationPercentage") { $0.revocationPercentage = $1 },
        .enumeration("billingPlanType", .billingPlanType) { ($0.billingPlanType, $0.billingPlanTypeRaw) = ($1, $2) },
        .object("commitmentInfo", commitmentInfo) { $0.commitmentInfo = $1 },
        .custom("advancedCommerceInfo", .object) {
            $0.advancedCommerceInfoJson = PayloadValue.jsonText($1)
            $0.advancedCommerceInfo = $1?.object.map { map($0, advancedCommerceTransactionInfo) }
        },
    ]

    /// A transaction's `commitmentInfo`.
    static let commitmentInfo: [PayloadField<CommitmentInfo>] = [
        .int32("billingPeriodNumber") { $0.billingPeriodNumber = $1 },
        .date("commitmentExpiresDate") { ($0.commitmentExpiresDate, $0.commitmentExpiresDateMillis) = ($1, $2) },
        .int64("commitmentPrice") { $0.commitmentPriceMilliunits = $1 },
        .int32("totalBillingPeriods") { $0.totalBillingPeriods = $1 },
    ]

    /// JWSRenewalInfoDecodedPayload → `RenewalInfo`.
    static let renewalInfo: [PayloadField<RenewalInfo>] = [
        .string("originalTransactionId") { $0.originalTransactionId = $1 },
        .string("productId") { $0.productId = $1 },
        .string("autoRenewProductId") { $0.autoRenewProductId = $1 },
        .number("autoRenewStatus", offset: 1) { $0.autoRenewStatus = $1 },
        .number("expirationIntent", offset: 0) { $0.expirationIntent = $1 },
        .optionalBool("isInBillingRetryPeriod") {
            ($0.isInBillingRetryPeriodValue, $0.isInBillingRetryPeriod) = ($1, $1?.value ?? false)
        },
        .date("gracePeriodExpiresDate") { ($0.gracePeriodExpiresDate, $0.gracePeriodExpiresDateMillis) = ($1, $2) },
        .number("priceIncreaseStatus", offset: 1) { $0.priceIncreaseStatus = $1 },
        .number("offerType", offset: 0) { $0.offerType = $1 },
        .string("offerIdentifier") { $0.offerIdentifier = $1 },
        .enumeration("offerDiscountType", .offerDiscountType) {
            ($0.offerDiscountType, $0.offerDiscountTypeRaw) = ($1, $2)
        },
        .string("offerPeriod") { $0.offerPeriod = $1 },
        .date("signedDate") { ($0.signedDate, $0.signedDateMillis) = ($1, $2) },
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
        .date("recentSubscriptionStartDate") {
            ($0.recentSubscriptionStartDate, $0.recentSubscriptionStartDateMillis) = ($1, $2)
        },
        .date("renewalDate") { ($0.renewalDate, $0.renewalDateMillis) = ($1, $2) },
        .int64("renewalPrice") { $0.renewalPriceMilliunits = $1 },
        .string("currency") { $0.currency = $1 },
        .strings("eligibleWinBackOfferIds") { $0.eligibleWinBackOfferIds = $1 },
        .string("appAccountToken") { $0.appAccountToken = $1 },
        .string("appTransactionId") { $0.appTransactionId = $1 },
        .object("commitmentInfo", renewalCommitmentInfo) { $0.commitmentInfo = $1 },
        .enumeration("renewalBillingPlanType", .billingPlanType) {
            ($0.renewalBillingPlanType, $0.renewalBillingPlanTypeRaw) = ($1, $2)
        },
        .custom("advancedCommerceInfo", .object) {
            $0.advancedCommerceInfoJson = PayloadValue.jsonText($1)
            $0.advancedCommerceInfo = $1?.object.map { map($0, advancedCommerceRenewalInfo) }
        },
    ]

    /// A renewal info's `commitmentInfo`.
    static let renewalCommitmentInfo: [PayloadField<RenewalCommitmentInfo>] = [
        .string("commitmentAutoRenewProductId") { $0.commitmentAutoRenewProductId = $1 },
        .number("commitmentAutoRenewStatus", offset: 1) { $0.commitmentAutoRenewStatus = $1 },
        .enumeration("commitmentRenewalBillingPlanType", .billingPlanType) {
            ($0.commitmentRenewalBillingPlanType, $0.commitmentRenewalBillingPlanTypeRaw) = ($1, $2)
        },
        .date("commitmentRenewalDate") { ($0.commitmentRenewalDate, $0.commitmentRenewalDateMillis) = ($1, $2) },
        .int64("commitmentRenewalPrice") { $0.commitmentRenewalPriceMilliunits = $1 },
    ]

    /// AppTransaction → `AppTransaction`.
    static let appTransaction: [PayloadField<AppTransaction>] = [
        .enumeration("receiptType", .environment) { ($0.receiptType, $0.receiptTypeRaw) = ($1, $2) },
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .string("applicationVersion") { $0.applicationVersion = $1 },
        .int64("versionExternalIdentifier") { $0.versionExternalIdentifier = $1 },
        .date("receiptCreationDate") { ($0.receiptCreationDate, $0.receiptCreationDateMillis) = ($1, $2) },
        .date("originalPurchaseDate") { ($0.originalPurchaseDate, $0.originalPurchaseDateMillis) = ($1, $2) },
        .string("originalApplicationVersion") { $0.originalApplicationVersion = $1 },
        .string("deviceVerification") { $0.deviceVerification = $1 },
        .string("deviceVerificationNonce") { $0.deviceVerificationNonce = $1 },
        .date("preorderDate") { ($0.preorderDate, $0.preorderDateMillis) = ($1, $2) },
        .string("appTransactionId") { $0.appTransactionId = $1 },
        .enumeration("originalPlatform", .originalPlatform) {
            ($0.originalPlatform, $0.originalPlatformRaw) = ($1, $2)
        },
    ]

    /// DecodedRealtimeRequestBody (Retention Messaging) → `RealtimeRequest`.
    static let realtimeRequest: [PayloadField<RealtimeRequest>] = [
        .string("originalTransactionId") { $0.originalTransactionId = $1 },
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("productId") { $0.productId = $1 },
        .string("userLocale") { $0.userLocale = $1 },
        .string("requestIdentifier") { $0.requestIdentifier = $1 },
        .date("signedDate") { ($0.signedDate, $0.signedDateMillis) = ($1, $2) },
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
    ]

    /// ResponseBodyV2DecodedPayload → `AppStoreNotification`; the nested `signed*Info` stay JWS strings.
    static let notification: [PayloadField<AppStoreNotification>] = [
        // The type and subtype keep a number Apple might send as its text, like an id.
        .custom("notificationType", .enumeration(.notificationType)) {
            $0.notificationTypeRaw = PayloadValue.string($1)
            $0.notificationType = NotificationType(
                rawValue: PayloadVocabulary.notificationType.numbers[$0.notificationTypeRaw] ?? 0)
        },
        .custom("subtype", .enumeration(.notificationSubtype)) {
            $0.subtypeRaw = PayloadValue.string($1)
            $0.subtype = NotificationSubtype(
                rawValue: PayloadVocabulary.notificationSubtype.numbers[$0.subtypeRaw] ?? 0)
        },
        .string("notificationUUID") { $0.notificationUuid = $1 },
        .string("version") { $0.version = $1 },
        .date("signedDate") { ($0.signedDate, $0.signedDateMillis) = ($1, $2) },
        .object("data", notificationData) { $0.data = $1 },
        .object("summary", notificationSummary) { $0.summary = $1 },
        .object("externalPurchaseToken", externalPurchaseToken) { $0.externalPurchaseToken = $1 },
        .object("appData", appData) { $0.appData = $1 },
    ]

    /// A notification's `data`.
    static let notificationData: [PayloadField<NotificationData>] = [
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .string("bundleVersion") { $0.bundleVersion = $1 },
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
        .number("status", offset: 0) { $0.status = $1 },
        .enumeration("consumptionRequestReason", .consumptionRequestReason) {
            ($0.consumptionRequestReason, $0.consumptionRequestReasonRaw) = ($1, $2)
        },
        .string("signedTransactionInfo") { $0.signedTransactionInfo = $1 },
        .string("signedRenewalInfo") { $0.signedRenewalInfo = $1 },
    ]

    /// A notification's `summary` (a mass renewal-date extension).
    static let notificationSummary: [PayloadField<NotificationSummary>] = [
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .string("productId") { $0.productId = $1 },
        .string("requestIdentifier") { $0.requestIdentifier = $1 },
        .strings("storefrontCountryCodes") { $0.storefrontCountryCodes = $1 },
        .int64("succeededCount") { $0.succeededCount = $1 },
        .int64("failedCount") { $0.failedCount = $1 },
    ]

    /// A notification's `externalPurchaseToken`.
    static let externalPurchaseToken: [PayloadField<ExternalPurchaseToken>] = [
        .string("externalPurchaseId") { $0.externalPurchaseId = $1 },
        .date("tokenCreationDate") { ($0.tokenCreationDate, $0.tokenCreationDateMillis) = ($1, $2) },
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .string("tokenType") { $0.tokenType = $1 },
        .date("tokenExpirationDate") { ($0.tokenExpirationDate, $0.tokenExpirationDateMillis) = ($1, $2) },
    ]

    /// A notification's `appData`.
    static let appData: [PayloadField<AppData>] = [
        .int64("appAppleId") { $0.appAppleId = $1 },
        .string("bundleId") { $0.bundleId = $1 },
        .enumeration("environment", .environment) { ($0.environment, $0.environmentRaw) = ($1, $2) },
        .string("signedAppTransactionInfo") { $0.signedAppTransactionInfo = $1 },
    ]

    /// `advancedCommerceInfo` of a transaction (Advanced Commerce API); its string enums stay strings.
    static let advancedCommerceTransactionInfo: [PayloadField<AdvancedCommerceTransactionInfo>] = [
        .object("descriptors", advancedCommerceDescriptors) { $0.descriptors = $1 },
        .int64("estimatedTax") { $0.estimatedTaxMilliunits = $1 },
        .objects("items", advancedCommerceTransactionItem) { $0.items = $1 },
        .string("period") { $0.period = $1 },
        .string("requestReferenceId") { $0.requestReferenceId = $1 },
        .string("taxCode") { $0.taxCode = $1 },
        .int64("taxExclusivePrice") { $0.taxExclusivePriceMilliunits = $1 },
        .string("taxRate") { $0.taxRate = $1 },
    ]

    /// `advancedCommerceInfo` of a renewal info.
    static let advancedCommerceRenewalInfo: [PayloadField<AdvancedCommerceRenewalInfo>] = [
        .string("consistencyToken") { $0.consistencyToken = $1 },
        .object("descriptors", advancedCommerceDescriptors) { $0.descriptors = $1 },
        .objects("items", advancedCommerceRenewalItem) { $0.items = $1 },
        .string("period") { $0.period = $1 },
        .string("requestReferenceId") { $0.requestReferenceId = $1 },
        .string("taxCode") { $0.taxCode = $1 },
    ]

    static let advancedCommerceDescriptors: [PayloadField<AdvancedCommerceDescriptors>] = [
        .string("description") { $0.description = $1 },
        .string("displayName") { $0.displayName = $1 },
    ]

    static let advancedCommerceTransactionItem: [PayloadField<AdvancedCommerceTransactionItem>] = [
        .string("SKU") { $0.sku = $1 },
        .string("description") { $0.description = $1 },
        .string("displayName") { $0.displayName = $1 },
        .object("offer", advancedCommerceOffer) { $0.offer = $1 },
        .int64("price") { $0.priceMilliunits = $1 },
        .objects("refunds", advancedCommerceRefund) { $0.refunds = $1 },
        .date("revocationDate") { ($0.revocationDate, $0.revocationDateMillis) = ($1, $2) },
    ]

    static let advancedCommerceRenewalItem: [PayloadField<AdvancedCommerceRenewalItem>] = [
        .string("SKU") { $0.sku = $1 },
        .string("description") { $0.description = $1 },
        .string("displayName") { $0.displayName = $1 },
        .object("offer", advancedCommerceOffer) { $0.offer = $1 },
        .int64("price") { $0.priceMilliunits = $1 },
        .object("priceIncreaseInfo", advancedCommercePriceIncrease) { $0.priceIncreaseInfo = $1 },
    ]

    static let advancedCommerceOffer: [PayloadField<AdvancedCommerceOffer>] = [
        .string("period") { $0.period = $1 },
        .int32("periodCount") { $0.periodCount = $1 },
        .int64("price") { $0.priceMilliunits = $1 },
        .string("reason") { $0.reason = $1 },
    ]

    static let advancedCommerceRefund: [PayloadField<AdvancedCommerceRefund>] = [
        .int64("refundAmount") { $0.refundAmountMilliunits = $1 },
        .date("refundDate") { ($0.refundDate, $0.refundDateMillis) = ($1, $2) },
        .string("refundReason") { $0.refundReason = $1 },
        .string("refundType") { $0.refundType = $1 },
    ]

    static let advancedCommercePriceIncrease: [PayloadField<AdvancedCommercePriceIncreaseInfo>] = [
        .strings("dependentSKUs") { $0.dependentSkus = $1 },
        .int64("price") { $0.priceMilliunits = $1 },
        .string("status") { $0.status = $1 },
    ]

    /// `fields` applied to `source`'s members, over what `message` already holds.
    static func apply<Message, Source: JSONFieldSource>(
        _ fields: [PayloadField<Message>], from source: Source, to message: inout Message
    ) {
        for field in fields { field.apply(&message, source[field.name]) }
    }

    /// A message mapped from `source` by `fields`.
    static func map<Message: ProtoMessage, Source: JSONFieldSource>(
        _ source: Source, _ fields: [PayloadField<Message>]
    ) -> Message {
        var message = Message()
        apply(fields, from: source, to: &message)
        return message
    }
}

/// A JSON object read by key: a payload's top level (`JSONMembers`) or a nested object.
protocol JSONFieldSource {
    subscript(key: String) -> JSONValue? { get }
}

extension JSONMembers: JSONFieldSource {}
extension Dictionary: JSONFieldSource where Key == String, Value == JSONValue {}
