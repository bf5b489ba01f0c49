import Foundation
import GatewayFoundation
import ProtoCodec

/// A verified payload decoded into the gateway's proto value types: the VerifyJWS answer's own oneof, so the
/// decoded value (boxed) goes into the answer as it is. Being the proto's oneof, a case added to
/// `VerifyJWSResponse.payload` in the proto is a case here too (and every exhaustive switch must handle it).
public typealias DecodedPayload = VerifyJWSResponse.Payload

/// Maps Apple's decoded payload JSON (Apple's App Store Server API documentation) to the proto value types, as a step separate
/// from verification. Tolerant by design: unknown enum strings become UNSPECIFIED and reach callers in the
/// field's `<field>_raw` string, unknown enum numbers stay as unrecognized proto numbers, optional booleans keep
/// "absent" apart from false, mistyped or unknown fields are skipped, and `raw_json` always keeps the payload
/// exactly as Apple sent it, so nothing Apple adds is ever out of reach.
public enum PayloadDecoder {
    /// The typed payload of a verified result (nil unless its status is `.ok` or `.unverifiedByDesign`), with a
    /// notification's nested transaction, renewal info and app transaction filled from its verified nested
    /// payloads.
    public static func decode(_ result: VerificationResult) -> DecodedPayload? {
        guard result.isVerified || result.status == .unverifiedByDesign, let kind = result.kind,
            let raw = result.rawJSON
        else { return nil }
        // The verifier's parse of these exact bytes, when it kept one, instead of parsing them again.
        guard let object = result.payloadObject ?? JSONMembers(parsing: raw) else { return nil }
        switch kind {
        case .transaction:
            // Filled in place and moved into the answer's box (a returned local was copied field by field).
            var transaction = Transaction()
            fill(&transaction, from: object, json: raw)
            return .transaction(transaction)
        case .renewalInfo: return .renewalInfo(renewalInfo(object, json: raw))
        case .appTransaction: return .appTransaction(appTransaction(object, json: raw))
        case .realtimeRequest: return .realtimeRequest(realtimeRequest(object, json: raw))
        case .notification:
            var notification = notification(object, json: raw)
            for nested in result.nestedPayloads {
                switch decode(nested.result) {
                case .transaction(let value)?: notification.data?.transaction = value
                case .renewalInfo(let value)?: notification.data?.renewalInfo = value
                case .appTransaction(let value)?: notification.appData?.appTransaction = value
                default: break
                }
            }
            return .notification(notification)
        }
    }

    /// JWSTransactionDecodedPayload → `Transaction` (nil when `json` is not a JSON object).
    public static func transaction(fromJSON json: Data) -> Transaction? {
        guard let object = JSONMembers(parsing: json) else { return nil }
        var transaction = Transaction()
        fill(&transaction, from: object, json: json)
        return transaction
    }

    private static func fill(_ t: inout Transaction, from object: JSONMembers, json: Data) {
        let p = Fields(object)
        t.transactionId = p.string("transactionId")
        t.originalTransactionId = p.string("originalTransactionId")
        t.webOrderLineItemId = p.string("webOrderLineItemId")
        t.bundleId = p.string("bundleId")
        t.productId = p.string("productId")
        t.subscriptionGroupIdentifier = p.string("subscriptionGroupIdentifier")
        t.purchaseDate = p.timestamp("purchaseDate")
        t.originalPurchaseDate = p.timestamp("originalPurchaseDate")
        t.expiresDate = p.timestamp("expiresDate")
        t.quantity = p.int32("quantity")
        (t.type, t.typeRaw) = p.enumeration(
            "type",
            [
                "Auto-Renewable Subscription": 1, "Non-Renewing Subscription": 2, "Consumable": 3, "Non-Consumable": 4,
            ])
        t.appAccountToken = p.string("appAccountToken")
        (t.inAppOwnershipType, t.inAppOwnershipTypeRaw) = p.enumeration(
            "inAppOwnershipType", ["PURCHASED": 1, "FAMILY_SHARED": 2])
        t.signedDate = p.timestamp("signedDate")
        t.revocationReason = RevocationReason(rawValue: p.number("revocationReason", offset: 1))
        t.revocationDate = p.timestamp("revocationDate")
        t.isUpgradedValue = p.optionalBool("isUpgraded")
        t.isUpgraded = t.isUpgradedValue?.value ?? false
        t.offerType = OfferType(rawValue: p.number("offerType", offset: 0))
        t.offerIdentifier = p.string("offerIdentifier")
        (t.environment, t.environmentRaw) = p.environment("environment")
        t.storefront = p.string("storefront")
        t.storefrontId = p.string("storefrontId")
        (t.transactionReason, t.transactionReasonRaw) = p.enumeration(
            "transactionReason", ["PURCHASE": 1, "RENEWAL": 2])
        t.currency = p.string("currency")
        t.priceMilliunits = p.int64("price")
        (t.offerDiscountType, t.offerDiscountTypeRaw) = p.offerDiscountType("offerDiscountType")
        t.appTransactionId = p.string("appTransactionId")
        t.offerPeriod = p.string("offerPeriod")
        (t.revocationType, t.revocationTypeRaw) = p.enumeration(
            "revocationType",
            [
                "REFUND_FULL": 1, "REFUND_PRORATED": 2, "FAMILY_REVOKE": 3,
            ])
        t.revocationPercentage = p.int32("revocationPercentage")
        (t.billingPlanType, t.billingPlanTypeRaw) = p.billingPlanType("billingPlanType")
        if let commitment = p.object("commitmentInfo") {
            let c = Fields(commitment)
            t.commitmentInfo = CommitmentInfo(
                billingPeriodNumber: c.int32("billingPeriodNumber"),
                commitmentExpiresDate: c.timestamp("commitmentExpiresDate"),
                commitmentPriceMilliunits: c.int64("commitmentPrice"),
                totalBillingPeriods: c.int32("totalBillingPeriods"))
        }
        t.advancedCommerceInfoJson = p.jsonText("advancedCommerceInfo")
        t.advancedCommerceInfo = p.object("advancedCommerceInfo").map(AdvancedCommerceDecoding.transactionInfo)
        t.rawJson = String(decoding: json, as: UTF8.self)
    }

    /// JWSRenewalInfoDecodedPayload → `RenewalInfo` (nil when `json` is not a JSON object).
    public static func renewalInfo(fromJSON json: Data) -> RenewalInfo? {
        JSONMembers(parsing: json).map { renewalInfo($0, json: json) }
    }

    private static func renewalInfo(_ object: JSONMembers, json: Data) -> RenewalInfo {
        let p = Fields(object)
        var r = RenewalInfo()
        r.originalTransactionId = p.string("originalTransactionId")
        r.productId = p.string("productId")
        r.autoRenewProductId = p.string("autoRenewProductId")
        r.autoRenewStatus = AutoRenewStatus(rawValue: p.number("autoRenewStatus", offset: 1))
        r.expirationIntent = ExpirationIntent(rawValue: p.number("expirationIntent", offset: 0))
        r.isInBillingRetryPeriodValue = p.optionalBool("isInBillingRetryPeriod")
        r.isInBillingRetryPeriod = r.isInBillingRetryPeriodValue?.value ?? false
        r.gracePeriodExpiresDate = p.timestamp("gracePeriodExpiresDate")
        r.priceIncreaseStatus = PriceIncreaseStatus(rawValue: p.number("priceIncreaseStatus", offset: 1))
        r.offerType = OfferType(rawValue: p.number("offerType", offset: 0))
        r.offerIdentifier = p.string("offerIdentifier")
        (r.offerDiscountType, r.offerDiscountTypeRaw) = p.offerDiscountType("offerDiscountType")
        r.offerPeriod = p.string("offerPeriod")
        r.signedDate = p.timestamp("signedDate")
        (r.environment, r.environmentRaw) = p.environment("environment")
        r.recentSubscriptionStartDate = p.timestamp("recentSubscriptionStartDate")
        r.renewalDate = p.timestamp("renewalDate")
        r.renewalPriceMilliunits = p.int64("renewalPrice")
        r.currency = p.string("currency")
        r.eligibleWinBackOfferIds = p.strings("eligibleWinBackOfferIds")
        r.appAccountToken = p.string("appAccountToken")
        r.appTransactionId = p.string("appTransactionId")
        if let commitment = p.object("commitmentInfo") {
            let c = Fields(commitment)
            let plan: (BillingPlanType, String) = c.billingPlanType("commitmentRenewalBillingPlanType")
            r.commitmentInfo = RenewalCommitmentInfo(
                commitmentAutoRenewProductId: c.string("commitmentAutoRenewProductId"),
                commitmentAutoRenewStatus: AutoRenewStatus(rawValue: c.number("commitmentAutoRenewStatus", offset: 1)),
                commitmentRenewalBillingPlanType: plan.0,
                commitmentRenewalDate: c.timestamp("commitmentRenewalDate"),
                commitmentRenewalPriceMilliunits: c.int64("commitmentRenewalPrice"),
                commitmentRenewalBillingPlanTypeRaw: plan.1)
        }
        (r.renewalBillingPlanType, r.renewalBillingPlanTypeRaw) = p.billingPlanType("renewalBillingPlanType")
        r.advancedCommerceInfoJson = p.jsonText("advancedCommerceInfo")
        r.advancedCommerceInfo = p.object("advancedCommerceInfo").map(AdvancedCommerceDecoding.renewalInfo)
        r.rawJson = String(decoding: json, as: UTF8.self)
        return r
    }

    /// AppTransaction payload → `AppTransaction` (nil when `json` is not a JSON object).
    public static func appTransaction(fromJSON json: Data) -> AppTransaction? {
        JSONMembers(parsing: json).map { appTransaction($0, json: json) }
    }

    private static func appTransaction(_ object: JSONMembers, json: Data) -> AppTransaction {
        let p = Fields(object)
        var a = AppTransaction()
        (a.receiptType, a.receiptTypeRaw) = p.environment("receiptType")
        a.appAppleId = p.int64("appAppleId")
        a.bundleId = p.string("bundleId")
        a.applicationVersion = p.string("applicationVersion")
        a.versionExternalIdentifier = p.int64("versionExternalIdentifier")
        a.receiptCreationDate = p.timestamp("receiptCreationDate")
        a.originalPurchaseDate = p.timestamp("originalPurchaseDate")
        a.originalApplicationVersion = p.string("originalApplicationVersion")
        a.deviceVerification = p.string("deviceVerification")
        a.deviceVerificationNonce = p.string("deviceVerificationNonce")
        a.preorderDate = p.timestamp("preorderDate")
        a.appTransactionId = p.string("appTransactionId")
        (a.originalPlatform, a.originalPlatformRaw) = p.enumeration(
            "originalPlatform",
            [
                "iOS": 1, "macOS": 2, "tvOS": 3, "visionOS": 4,
            ])
        a.rawJson = String(decoding: json, as: UTF8.self)
        return a
    }

    /// DecodedRealtimeRequestBody (Retention Messaging) → `RealtimeRequest` (nil when `json` is not a JSON object).
    public static func realtimeRequest(fromJSON json: Data) -> RealtimeRequest? {
        JSONMembers(parsing: json).map { realtimeRequest($0, json: json) }
    }

    private static func realtimeRequest(_ object: JSONMembers, json: Data) -> RealtimeRequest {
        let p = Fields(object)
        var r = RealtimeRequest()
        r.originalTransactionId = p.string("originalTransactionId")
        r.appAppleId = p.int64("appAppleId")
        r.productId = p.string("productId")
        r.userLocale = p.string("userLocale")
        r.requestIdentifier = p.string("requestIdentifier")
        r.signedDate = p.timestamp("signedDate")
        (r.environment, r.environmentRaw) = p.environment("environment")
        r.rawJson = String(decoding: json, as: UTF8.self)
        return r
    }

    /// ResponseBodyV2DecodedPayload → `AppStoreNotification` (nil when `json` is not a JSON object). The
    /// nested `signed*Info` stay as JWS strings here; `decode(_:)` adds their verified decodings.
    public static func notification(fromJSON json: Data) -> AppStoreNotification? {
        JSONMembers(parsing: json).map { notification($0, json: json) }
    }

    private static func notification(_ object: JSONMembers, json: Data) -> AppStoreNotification {
        let p = Fields(object)
        var n = AppStoreNotification()
        n.notificationTypeRaw = p.string("notificationType")
        n.notificationType = NotificationType(rawValue: Self.notificationTypes[n.notificationTypeRaw] ?? 0)
        n.subtypeRaw = p.string("subtype")
        n.subtype = NotificationSubtype(rawValue: Self.notificationSubtypes[n.subtypeRaw] ?? 0)
        n.notificationUuid = p.string("notificationUUID")
        n.version = p.string("version")
        n.signedDate = p.timestamp("signedDate")
        if let data = p.object("data") {
            let d = Fields(data)
            let environment: (Environment, String) = d.environment("environment")
            let reason: (ConsumptionRequestReason, String) = d.enumeration(
                "consumptionRequestReason",
                [
                    "UNINTENDED_PURCHASE": 1, "FULFILLMENT_ISSUE": 2, "UNSATISFIED_WITH_PURCHASE": 3, "LEGAL": 4,
                    "OTHER": 5,
                ])
            n.data = NotificationData(
                appAppleId: d.int64("appAppleId"), bundleId: d.string("bundleId"),
                bundleVersion: d.string("bundleVersion"), environment: environment.0,
                status: SubscriptionStatus(rawValue: d.number("status", offset: 0)),
                consumptionRequestReason: reason.0,
                signedTransactionInfo: d.string("signedTransactionInfo"),
                signedRenewalInfo: d.string("signedRenewalInfo"), environmentRaw: environment.1,
                consumptionRequestReasonRaw: reason.1)
        }
        if let summary = p.object("summary") {
            let s = Fields(summary)
            let environment: (Environment, String) = s.environment("environment")
            n.summary = NotificationSummary(
                environment: environment.0, appAppleId: s.int64("appAppleId"),
                bundleId: s.string("bundleId"), productId: s.string("productId"),
                requestIdentifier: s.string("requestIdentifier"),
                storefrontCountryCodes: s.strings("storefrontCountryCodes"),
                succeededCount: s.int64("succeededCount"), failedCount: s.int64("failedCount"),
                environmentRaw: environment.1)
        }
        if let token = p.object("externalPurchaseToken") {
            let e = Fields(token)
            n.externalPurchaseToken = ExternalPurchaseToken(
                externalPurchaseId: e.string("externalPurchaseId"), tokenCreationDate: e.timestamp("tokenCreationDate"),
                appAppleId: e.int64("appAppleId"), bundleId: e.string("bundleId"), tokenType: e.string("tokenType"),
                tokenExpirationDate: e.timestamp("tokenExpirationDate"))
        }
        if let appData = p.object("appData") {
            let a = Fields(appData)
            let environment: (Environment, String) = a.environment("environment")
            n.appData = AppData(
                appAppleId: a.int64("appAppleId"), bundleId: a.string("bundleId"),
                environment: environment.0,
                signedAppTransactionInfo: a.string("signedAppTransactionInfo"), environmentRaw: environment.1)
        }
        n.rawJson = String(decoding: json, as: UTF8.self)
        return n
    }

    private static let notificationTypes: [String: Int32] = [
        "SUBSCRIBED": 1, "DID_CHANGE_RENEWAL_PREF": 2, "DID_CHANGE_RENEWAL_STATUS": 3, "OFFER_REDEEMED": 4,
        "DID_RENEW": 5, "EXPIRED": 6, "DID_FAIL_TO_RENEW": 7, "GRACE_PERIOD_EXPIRED": 8, "PRICE_INCREASE": 9,
        "REFUND": 10, "REFUND_DECLINED": 11, "REFUND_REVERSED": 12, "REVOKE": 13, "CONSUMPTION_REQUEST": 14,
        "RENEWAL_EXTENDED": 15, "TEST": 16, "ONE_TIME_CHARGE": 17, "RENEWAL_EXTENSION": 18,
        "EXTERNAL_PURCHASE_TOKEN": 19, "RESCIND_CONSENT": 20, "METADATA_UPDATE": 21, "MIGRATION": 22,
        "PRICE_CHANGE": 23,
    ]

    private static let notificationSubtypes: [String: Int32] = [
        "INITIAL_BUY": 1, "RESUBSCRIBE": 2, "UPGRADE": 3, "DOWNGRADE": 4, "AUTO_RENEW_ENABLED": 5,
        "AUTO_RENEW_DISABLED": 6, "BILLING_RECOVERY": 7, "VOLUNTARY": 8, "BILLING_RETRY": 9, "PRICE_INCREASE": 10,
        "PRODUCT_NOT_FOR_SALE": 11, "GRACE_PERIOD": 12, "PENDING": 13, "ACCEPTED": 14, "SUMMARY": 15,
        "FAILURE": 16, "UNREPORTED": 17, "CREATED": 18, "ACTIVE_TOKEN_REMINDER": 19,
    ]
}

/// A JSON object read by key: a payload's top level (`JSONMembers`) or a nested object.
protocol JSONFieldSource {
    subscript(key: String) -> JSONValue? { get }
}

extension JSONMembers: JSONFieldSource {}
extension Dictionary: JSONFieldSource where Key == String, Value == JSONValue {}

/// Typed, forgiving reads of one JSON object: a missing or mistyped field reads as the proto default.
struct Fields<Object: JSONFieldSource> {
    let object: Object
    init(_ object: Object) { self.object = object }

    /// Strings; ids sent as numbers (some older payloads) are kept as their decimal text.
    func string(_ key: String) -> String {
        switch object[key] {
        case .string(let value)?: value
        case .integer(let value)?: String(value)
        default: ""
        }
    }

    func strings(_ key: String) -> [String] {
        guard case .array(let values)? = object[key] else { return [] }
        return values.compactMap(\.string)
    }

    func int64(_ key: String) -> Int64 { object[key]?.int64 ?? 0 }

    func int32(_ key: String) -> Int32 { object[key]?.int64.flatMap { Int32(exactly: $0) } ?? 0 }

    /// A boolean Apple sends only sometimes: nil when absent (or not a boolean), else its value.
    func optionalBool(_ key: String) -> ProtoBoolValue? {
        if case .bool(let value)? = object[key] { return ProtoBoolValue(value: value) }
        return nil
    }

    func object(_ key: String) -> [String: JSONValue]? { object[key]?.object }

    /// The objects of an array (other elements skipped); the JWS length bounds how many there can be.
    func objects(_ key: String) -> [[String: JSONValue]] {
        guard case .array(let values)? = object[key] else { return [] }
        return values.compactMap(\.object)
    }

    func jsonText(_ key: String) -> String { object[key].map { $0 == .null ? "" : $0.jsonText } ?? "" }

    /// Milliseconds since 1970 → Timestamp (floor division keeps nanos non-negative for pre-1970 dates).
    func timestamp(_ key: String) -> ProtoTimestamp? {
        guard let milliseconds = object[key]?.int64 else { return nil }
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let floored = remainder < 0 ? (seconds - 1, remainder + 1000) : (seconds, remainder)
        return ProtoTimestamp(seconds: floored.0, nanos: Int32(floored.1) * 1_000_000)
    }

    /// Apple's number + `offset` as the proto number; absent (or out of range) → 0 = UNSPECIFIED. An unknown
    /// Apple number stays as an unrecognized proto number.
    func number(_ key: String, offset: Int32) -> Int32 {
        guard let value = object[key]?.int64, let apple = Int32(exactly: value), apple >= 0,
            apple < Int32.max - offset
        else { return 0 }
        return apple + offset
    }

    /// A string enum: the proto value through `table` (UNSPECIFIED when absent or unknown) and the string
    /// exactly as Apple sent it (empty when absent or not a string), so an unknown value still reaches callers.
    func enumeration<Value: OpenProtoEnum>(_ key: String, _ table: KeyValuePairs<String, Int32>) -> (Value, String) {
        let raw = object[key]?.string ?? ""
        return (Value(rawValue: table.first { $0.key == raw }?.value ?? 0), raw)
    }

    func environment(_ key: String) -> (Environment, String) {
        enumeration(key, ["Production": 1, "Sandbox": 2, "Xcode": 3, "LocalTesting": 4])
    }

    func offerDiscountType(_ key: String) -> (OfferDiscountType, String) {
        enumeration(key, ["FREE_TRIAL": 1, "PAY_AS_YOU_GO": 2, "PAY_UP_FRONT": 3, "ONE_TIME": 4])
    }

    func billingPlanType(_ key: String) -> (BillingPlanType, String) {
        enumeration(key, ["BILLED_UPFRONT": 1, "MONTHLY": 2])
    }
}

/// A generated proto enum: every Int32 is a value (unknown numbers are kept as `.unrecognized`).
protocol OpenProtoEnum { init(rawValue: Int32) }

extension Environment: OpenProtoEnum {}
extension ProductType: OpenProtoEnum {}
extension InAppOwnershipType: OpenProtoEnum {}
extension TransactionReason: OpenProtoEnum {}
extension OfferDiscountType: OpenProtoEnum {}
extension RevocationType: OpenProtoEnum {}
extension BillingPlanType: OpenProtoEnum {}
extension OriginalPlatform: OpenProtoEnum {}
extension ConsumptionRequestReason: OpenProtoEnum {}
