import Foundation
import ProtoCodec

extension LegacyReceiptInfo {
    /// The legacy `latest_receipt_info` entry of a decoded transaction (Apple's App Store Server API documentation), every value a
    /// string as verifyReceipt sent them. Fields verifyReceipt omitted when not applicable stay empty
    /// (no expiry, no cancellation, `is_upgraded` unless upgraded, offer ids of other offer types).
    ///
    /// Trial and intro-offer flags (decisions, also in docs/upstream-client.md):
    /// - `is_trial_period` is "true" only for an introductory offer (`offerType` 1) that is a free trial;
    ///   `is_in_intro_offer_period` only for an introductory offer paid as you go or up front.
    /// - A free-trial *offer code* (`offerType` 3) or promotional offer (2) sets neither flag: verifyReceipt
    ///   reported those through `offer_code_ref_name` / `promotional_offer_id`, which are filled.
    /// - Transactions older than API 1.10 carry no `offerDiscountType`. For an introductory offer the price
    ///   decides: 0 (or no price) reads as a free trial, a positive price as a paid intro offer. This is a
    ///   heuristic, not an Apple rule.
    init(transaction t: Transaction) {
        self.init()
        let format = LegacyDateFormat()
        transactionId = t.transactionId
        originalTransactionId = t.originalTransactionId
        productId = t.productId
        webOrderLineItemId = t.webOrderLineItemId
        subscriptionGroupIdentifier = t.subscriptionGroupIdentifier
        appAccountToken = t.appAccountToken
        quantity = t.quantity > 0 ? String(t.quantity) : ""
        if let date = t.purchaseDate {
            (purchaseDate, purchaseDateMs, purchaseDatePst) = format.fields(date.unixMilliseconds)
        }
        if let date = t.originalPurchaseDate {
            (originalPurchaseDate, originalPurchaseDateMs, originalPurchaseDatePst) = format.fields(
                date.unixMilliseconds)
        }
        if let date = t.expiresDate {
            (expiresDate, expiresDateMs, expiresDatePst) = format.fields(date.unixMilliseconds)
        }
        if let date = t.revocationDate {
            (cancellationDate, cancellationDateMs, cancellationDatePst) = format.fields(date.unixMilliseconds)
            // The proto numbers RevocationReason as Apple's value + 1 (0 is UNSPECIFIED).
            if t.revocationReason.rawValue > 0 { cancellationReason = String(t.revocationReason.rawValue - 1) }
        }
        switch t.inAppOwnershipType {
        case .purchased: inAppOwnershipType = "PURCHASED"
        case .familyShared: inAppOwnershipType = "FAMILY_SHARED"
        default: break
        }
        if t.isUpgraded { isUpgraded = "true" }
        switch t.offerType {
        case .offerCode: offerCodeRefName = t.offerIdentifier
        case .promotionalOffer: promotionalOfferId = t.offerIdentifier
        default: break
        }
        let introductory = t.offerType == .introductoryOffer
        let trial: Bool
        let intro: Bool
        switch t.offerDiscountType {
        case .freeTrial: (trial, intro) = (introductory, false)
        case .payAsYouGo, .payUpFront: (trial, intro) = (false, introductory)
        case .unspecified:
            (trial, intro) = (introductory && t.priceMilliunits == 0, introductory && t.priceMilliunits > 0)
        default: (trial, intro) = (false, false)
        }
        isTrialPeriod = trial ? "true" : "false"
        isInIntroOfferPeriod = intro ? "true" : "false"
    }
}

/// verifyReceipt's three spellings of a date: `2023-10-24 12:34:56 Etc/GMT`, milliseconds, and the same
/// wall time in `America/Los_Angeles`.
private struct LegacyDateFormat {
    private let gmt: DateFormatter
    private let pacific: DateFormatter

    init() {
        gmt = Self.formatter(zone: "GMT", suffix: "Etc/GMT")
        pacific = Self.formatter(zone: "America/Los_Angeles", suffix: "America/Los_Angeles")
    }

    private static func formatter(zone: String, suffix: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss '\(suffix)'"
        return formatter
    }

    func fields(_ milliseconds: Int64) -> (String, String, String) {
        let date = Date(timeIntervalSince1970: TimeInterval(milliseconds.floorDivided1000))
        return (gmt.string(from: date), String(milliseconds), pacific.string(from: date))
    }
}

extension Int64 {
    /// Whole seconds, rounded toward the past (the legacy strings have second precision).
    fileprivate var floorDivided1000: Int64 {
        self >= 0 ? self / 1000 : -((-self + 999) / 1000)
    }
}
