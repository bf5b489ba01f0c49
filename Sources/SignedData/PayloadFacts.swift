import Foundation
import GatewayFoundation

/// What the verifier reads from a decoded payload before and after the signature check: its kind, the
/// verification time, and the app identity Apple's libraries bind to (Apple's App Store Server API documentation).
struct PayloadFacts: Sendable {
    let kind: SignedDataKind
    /// `signedDate`, or `receiptCreationDate` for app transactions.
    let signedDate: Date?
    let identity: AppIdentity
    /// Nested JWS strings of a notification, with the kind each must be.
    let nested: [(field: NestedPayloadField, jws: String)]

    /// The identity a payload claims.
    struct AppIdentity: Sendable {
        var bundleID: String?
        var appAppleID: Int64?
        var environment: String?
        /// Where in the payload the identity was found, for messages (e.g. `data`).
        var source: String
    }

    init(payload: JSONMembers, requestedKind: SignedDataKind?) throws(Rejection) {
        guard let kind = Self.detectKind(payload) else {
            if let requestedKind {
                throw Rejection(
                    .wrongKind, "a \(requestedKind.rawValue) was asked for; the payload is none of the App Store kinds")
            }
            throw Rejection(
                .malformed,
                "the payload is not a transaction, renewal info, notification, app transaction or realtime request")
        }
        self.kind = kind
        let dateField = kind == .appTransaction ? "receiptCreationDate" : "signedDate"
        if let value = payload[dateField] {
            // Read as the payload's other dates are: Xcode signs fractional milliseconds, kept to the millisecond.
            guard let milliseconds = PayloadValue.milliseconds(value) else {
                throw Rejection(.malformed, "\(dateField) is not a number of milliseconds")
            }
            // Checked before any use: the date picks the chain's validation time and goes back to the caller,
            // so an instant no signer can have signed at is refused, not clamped.
            guard AppleDateRange.milliseconds.contains(milliseconds) else {
                throw Rejection(.malformed, "\(dateField) is outside 1970-01-01 to 9999-12-31")
            }
            signedDate = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
        } else {
            signedDate = nil
        }
        var nested: [(NestedPayloadField, String)] = []
        switch kind {
        case .transaction:
            identity = AppIdentity(
                bundleID: payload["bundleId"]?.string, environment: payload["environment"]?.string, source: "payload")
        case .renewalInfo:
            identity = AppIdentity(environment: payload["environment"]?.string, source: "payload")
        case .appTransaction:
            identity = AppIdentity(
                bundleID: payload["bundleId"]?.string, appAppleID: payload["appAppleId"]?.int64,
                environment: payload["receiptType"]?.string, source: "payload")
        case .realtimeRequest:
            identity = AppIdentity(
                appAppleID: payload["appAppleId"]?.int64, environment: payload["environment"]?.string, source: "payload"
            )
        case .notification:
            identity = Self.notificationIdentity(payload)
            for (container, field) in [
                ("data", NestedPayloadField.signedTransactionInfo),
                ("data", .signedRenewalInfo), ("appData", .signedAppTransactionInfo),
            ] {
                guard let value = payload[container]?.object?[field.rawValue] else { continue }
                guard let jws = value.string else {
                    throw Rejection(.malformed, "\(container).\(field.rawValue) is not a string")
                }
                nested.append((field, jws))
            }
        }
        self.nested = nested
    }

    private static func detectKind(_ payload: JSONMembers) -> SignedDataKind? {
        if payload["notificationType"] != nil { return .notification }
        if payload["receiptType"] != nil { return .appTransaction }
        if payload["userLocale"] != nil, payload["requestIdentifier"] != nil { return .realtimeRequest }
        if payload["transactionId"] != nil { return .transaction }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil { return .renewalInfo }
        return nil
    }

    /// Identity from `data`, else `summary`, else `externalPurchaseToken`, else `appData` (Apple's order).
    private static func notificationIdentity(_ payload: JSONMembers) -> AppIdentity {
        func identity(of source: String) -> AppIdentity? {
            guard let object = payload[source]?.object else { return nil }
            return AppIdentity(
                bundleID: object["bundleId"]?.string, appAppleID: object["appAppleId"]?.int64,
                environment: object["environment"]?.string, source: source)
        }
        if let found = identity(of: "data") ?? identity(of: "summary") { return found }
        if let token = payload["externalPurchaseToken"]?.object {
            // Apple marks sandbox tokens by the id's prefix; the object has no environment field.
            let environment = token["externalPurchaseId"]?.string.map {
                $0.hasPrefix("SANDBOX") ? AppStoreEnvironment.sandbox.rawValue : AppStoreEnvironment.production.rawValue
            }
            return AppIdentity(
                bundleID: token["bundleId"]?.string, appAppleID: token["appAppleId"]?.int64,
                environment: environment, source: "externalPurchaseToken")
        }
        return identity(of: "appData")
            ?? AppIdentity(source: "notification (no data, summary, externalPurchaseToken or appData)")
    }
}
