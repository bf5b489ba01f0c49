import ProtoCodec
import SubscriptionState

/// Builders of decoded snapshots for the tests: ProtoCodec values with fake JWS strings (the reducer trusts its
/// input, so no signature is needed). Every date is UNIX ms, set as both the Timestamp and its exact millis, as
/// SignedData decodes them.
enum Snapshots {
    static let bundleId = "com.example.reader"
    static let environment = Environment.sandbox
    /// A fixed reference instant: 2023-11-14T22:13:20Z.
    static let t0: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000

    /// The instant `days` days (and `plus` ms) after `t0`.
    static func at(_ days: Int64, plus: Int64 = 0) -> Int64 { t0 + days * day + plus }

    static func key(_ originalTransactionId: String) -> SubscriptionKey {
        SubscriptionKey(bundleId: bundleId, environment: environment, originalTransactionId: originalTransactionId)
    }

    static func timestamp(_ millis: Int64?) -> ProtoTimestamp? {
        millis.map { ProtoTimestamp(seconds: $0 / 1000, nanos: Int32($0 % 1000) * 1_000_000) }
    }

    /// A signed transaction; `tag` tells apart two snapshots signed in the same millisecond.
    static func transaction(
        _ id: String, original: String, product: String = "basic.monthly", purchased: Int64, expires: Int64?,
        signed: Int64, revoked: Int64? = nil, upgraded: Bool = false, type: ProductType = .autoRenewable,
        ownership: InAppOwnershipType = .purchased, offer: OfferType = .unspecified, token: String = "",
        bundle: String = bundleId, environment: Environment = environment, tag: String = ""
    ) -> SignedTransaction {
        var payload = Transaction(
            transactionId: id, originalTransactionId: original, bundleId: bundle, productId: product,
            subscriptionGroupIdentifier: type == .autoRenewable ? "group.reader" : "",
            purchaseDate: timestamp(purchased), expiresDate: timestamp(expires), quantity: 1, type: type,
            appAccountToken: token, inAppOwnershipType: ownership, signedDate: timestamp(signed),
            revocationReason: revoked == nil ? .unspecified : .other, revocationDate: timestamp(revoked),
            isUpgraded: upgraded, offerType: offer, environment: environment)
        payload.purchaseDateMillis = purchased
        payload.expiresDateMillis = expires ?? 0
        payload.signedDateMillis = signed
        payload.revocationDateMillis = revoked ?? 0
        return SignedTransaction(jws: "eyJ.tx-\(id)-\(signed)\(tag).sig", payload: payload)
    }

    /// A signed renewal info.
    static func renewal(
        original: String, product: String = "basic.monthly", autoRenewProduct: String? = nil, autoRenew: Bool = true,
        inBillingRetry: Bool = false, graceEnds: Int64? = nil, intent: ExpirationIntent = .unspecified,
        signed: Int64, token: String = "", environment: Environment = environment, tag: String = ""
    ) -> SignedRenewalInfo {
        var payload = RenewalInfo(
            originalTransactionId: original, productId: product, autoRenewProductId: autoRenewProduct ?? product,
            autoRenewStatus: autoRenew ? .on : .off, expirationIntent: intent,
            isInBillingRetryPeriod: inBillingRetry, gracePeriodExpiresDate: timestamp(graceEnds),
            signedDate: timestamp(signed), environment: environment, appAccountToken: token)
        payload.gracePeriodExpiresDateMillis = graceEnds ?? 0
        payload.signedDateMillis = signed
        return SignedRenewalInfo(jws: "eyJ.rn-\(original)-\(signed)\(tag).sig", payload: payload)
    }
}
