import Foundation
import NotificationStore
import ProtoCodec
import SubscriptionState

/// Decoded snapshots for the subscription-store tests: ProtoCodec values with fake JWS strings (a store trusts
/// its input; verification happens before). Dates are UNIX ms, set as the Timestamp and its exact millis, as
/// SignedData decodes them.
enum StateSnapshots {
    static let bundleId = "com.example.reader"
    static let environment = Environment.sandbox
    /// 2023-11-14T22:13:20Z.
    static let t0: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000

    static func key(_ original: String, bundle: String = bundleId) -> SubscriptionKey {
        SubscriptionKey(bundleId: bundle, environment: environment, originalTransactionId: original)
    }

    static func timestamp(_ millis: Int64?) -> ProtoTimestamp? {
        millis.map { ProtoTimestamp(seconds: $0 / 1000, nanos: Int32($0 % 1000) * 1_000_000) }
    }

    /// A signed transaction of `original`, purchased `purchased` ms after t0, signed `signed` ms after t0.
    static func transaction(
        _ id: String, original: String, product: String = "reader.monthly", group: String = "group.reader",
        purchased: Int64 = 0, expires: Int64? = 30 * day, signed: Int64, revoked: Int64? = nil,
        type: ProductType = .autoRenewable, ownership: InAppOwnershipType = .purchased, token: String = "",
        bundle: String = bundleId, tag: String = ""
    ) -> SignedTransaction {
        var payload = Transaction(
            transactionId: id, originalTransactionId: original, bundleId: bundle, productId: product,
            subscriptionGroupIdentifier: type == .autoRenewable ? group : "",
            purchaseDate: timestamp(t0 + purchased), expiresDate: timestamp(expires.map { t0 + $0 }), quantity: 1,
            type: type, appAccountToken: token, inAppOwnershipType: ownership, signedDate: timestamp(t0 + signed),
            revocationReason: revoked == nil ? .unspecified : .other,
            revocationDate: timestamp(revoked.map { t0 + $0 }),
            environment: environment)
        payload.purchaseDateMillis = t0 + purchased
        payload.expiresDateMillis = expires.map { t0 + $0 } ?? 0
        payload.signedDateMillis = t0 + signed
        payload.revocationDateMillis = revoked.map { t0 + $0 } ?? 0
        payload.rawJson = #"{"transactionId":"\#(id)","note":"é ✓ \u0000"}"#
        return SignedTransaction(jws: "eyJhbGciOiJFUzI1NiJ9.tx-\(id)-\(signed)\(tag).c2ln_-", payload: payload)
    }

    /// A signed renewal info of `original`.
    static func renewal(
        original: String, product: String = "reader.monthly", autoRenew: Bool = true, inBillingRetry: Bool = false,
        graceEnds: Int64? = nil, signed: Int64, token: String = "", tag: String = ""
    ) -> SignedRenewalInfo {
        var payload = RenewalInfo(
            originalTransactionId: original, productId: product, autoRenewProductId: product,
            autoRenewStatus: autoRenew ? .on : .off, isInBillingRetryPeriod: inBillingRetry,
            gracePeriodExpiresDate: timestamp(graceEnds.map { t0 + $0 }), signedDate: timestamp(t0 + signed),
            environment: environment, appAccountToken: token)
        payload.gracePeriodExpiresDateMillis = graceEnds.map { t0 + $0 } ?? 0
        payload.signedDateMillis = t0 + signed
        payload.rawJson = #"{"originalTransactionId":"\#(original)"}"#
        return SignedRenewalInfo(jws: "eyJhbGciOiJFUzI1NiJ9.rn-\(original)-\(signed)\(tag).c2ln", payload: payload)
    }

    /// A change from a notification at t0 + `now`.
    static func change(
        _ transaction: SignedTransaction?, _ renewal: SignedRenewalInfo? = nil, key: SubscriptionKey? = nil,
        source: SnapshotSource = .notification, now: Int64 = 0, events: SubscriptionEventContext? = nil
    ) throws -> SubscriptionChange {
        guard let key = key ?? transaction.map({ SubscriptionKey(of: $0.payload) }) else {
            throw CocoaError(.featureUnsupported)
        }
        return try SubscriptionChange(
            key: key, transaction: transaction, renewalInfo: renewal, source: source, nowMillis: t0 + now,
            events: events)
    }
}
