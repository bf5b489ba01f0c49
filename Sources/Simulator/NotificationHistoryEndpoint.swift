import AppStoreDomain
import Foundation
import GatewayFoundation

/// Get Notification History (Apple's App Store Server API documentation): POST body filters, the 180-day (production) or
/// 30-day (sandbox) window, `notificationType`/`transactionId` exclusivity, `onlyFailures`, 20 per page
/// with an opaque, expiring `paginationToken`.
struct NotificationHistoryEndpoint: Sendable {
    static let pageSize = 20
    let tokens: PaginationTokenCodec
    let tokenLifetime: Duration

    /// Every V2 notification type with its allowed subtypes (Apple's App Store Server API documentation).
    static let subtypes: [String: Set<String>] = [
        "SUBSCRIBED": ["INITIAL_BUY", "RESUBSCRIBE"],
        "DID_CHANGE_RENEWAL_PREF": ["UPGRADE", "DOWNGRADE"],
        "DID_CHANGE_RENEWAL_STATUS": ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"],
        "OFFER_REDEEMED": ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE"],
        "DID_RENEW": ["BILLING_RECOVERY"],
        "EXPIRED": ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"],
        "DID_FAIL_TO_RENEW": ["GRACE_PERIOD"],
        "GRACE_PERIOD_EXPIRED": [], "PRICE_INCREASE": ["PENDING", "ACCEPTED"], "REFUND": [],
        "REFUND_DECLINED": [], "REFUND_REVERSED": [], "REVOKE": [], "CONSUMPTION_REQUEST": [],
        "RENEWAL_EXTENDED": [], "TEST": [], "ONE_TIME_CHARGE": [], "RENEWAL_EXTENSION": ["SUMMARY", "FAILURE"],
        "EXTERNAL_PURCHASE_TOKEN": ["UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER"], "RESCIND_CONSENT": [],
        "METADATA_UPDATE": [], "MIGRATION": [], "PRICE_CHANGE": [],
    ]

    /// The request body, validated in Apple's order.
    struct Request {
        var startDate: Int64
        var endDate: Int64
        var notificationType: String?
        var notificationSubtype: String?
        var transactionId: String?
        var onlyFailures: Bool

        init(body: [UInt8], now: WallTime, environment: AppleEnvironment) throws(AppleRejection) {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
                throw AppleRejection(4_000_000, "Invalid request.")
            }
            guard let start = Self.integer(object["startDate"]) else {
                throw AppleRejection(4_000_015, "Invalid start date.")
            }
            guard let end = Self.integer(object["endDate"]) else {
                throw AppleRejection(4_000_016, "Invalid end date.")
            }
            guard start < end else {
                throw AppleRejection(4_000_013, "Invalid request. The start date is earlier than the end date.")
            }
            let oldest = (now - NotificationHistoryRequestBody.retention(in: environment)).millisecondsSince1970
            guard start >= oldest else {
                throw AppleRejection(4_000_012, "Invalid request. The start date is too far in the past.")
            }
            startDate = start
            endDate = min(end, now.millisecondsSince1970)  // Apple clamps a future end date to now.
            notificationType = try Self.optionalString(object["notificationType"], code: 4_000_018)
            notificationSubtype = try Self.optionalString(object["notificationSubtype"], code: 4_000_018)
            transactionId = try Self.optionalString(object["transactionId"], code: 4_000_006)
            if notificationType != nil, transactionId != nil {
                throw AppleRejection(
                    4_000_019, "Invalid request. Supply either a notification type or a transaction id, not both.")
            }
            if let type = notificationType {
                guard let allowed = NotificationHistoryEndpoint.subtypes[type] else {
                    throw AppleRejection(4_000_018, "Invalid notification type.")
                }
                if let subtype = notificationSubtype, !allowed.contains(subtype) {
                    throw AppleRejection(4_000_018, "Invalid notification type.")
                }
            } else if notificationSubtype != nil {
                throw AppleRejection(4_000_018, "Invalid notification type.")
            }
            if let transactionId, !TransactionIdentifier.isWellFormed(transactionId) {
                throw .invalidTransactionId()
            }
            switch object["onlyFailures"] {
            case nil: onlyFailures = false
            case let flag as Bool: onlyFailures = flag
            default: throw AppleRejection(4_000_000, "Invalid request.")
            }
        }

        /// What a pagination token is bound to: the filters as sent.
        var fingerprint: String {
            [
                String(startDate), notificationType ?? "", notificationSubtype ?? "", transactionId ?? "",
                onlyFailures ? "1" : "0",
            ].joined(separator: "|")
        }

        private static func integer(_ value: Any?) -> Int64? {
            guard let number = value as? NSNumber, !(value is String) else { return nil }
            let double = number.doubleValue
            guard double.isFinite, double >= 0, double < 1e15, double == double.rounded() else { return nil }
            return Int64(double)
        }

        private static func optionalString(_ value: Any?, code: Int64) throws(AppleRejection) -> String? {
            switch value {
            case nil, is NSNull: return nil
            case let text as String: return text.isEmpty ? nil : text
            default:
                throw AppleRejection(code, code == 4_000_006 ? "Invalid transaction id." : "Invalid notification type.")
            }
        }
    }

    /// `forgedPosition`: the page's item at that 1-based position gets a signature that does not verify (fault
    /// `forged-notification=N`), as a tampered or corrupted record would.
    /// `jws` with one character in the middle of its signature changed: still well-formed, never valid.
    static func forged(_ jws: String) -> String {
        var characters = Array(jws)
        let index = characters.count - 20
        guard index > 0 else { return jws }
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }

    func respond(
        body: [UInt8], paginationToken: String?, dataset: SimulatedDataset, signer: SignedPayloads, now: WallTime,
        forgedPosition: Int? = nil
    ) throws(AppleRejection) -> OrderedJSON {
        let request = try Request(body: body, now: now, environment: dataset.environment)
        var offset = 0
        if let paginationToken {
            let cursor = try tokens.decode(paginationToken)
            guard cursor.fingerprint == PaginationTokenCodec.digest(request.fingerprint) else {
                throw AppleRejection(4_000_014, "Invalid pagination token.")
            }
            guard now.millisecondsSince1970 - cursor.issuedAt <= tokenLifetime.wholeMilliseconds else {
                throw AppleRejection(4_000_017, "Invalid request. The pagination token is expired.")
            }
            offset = cursor.offset
        }
        var candidates: [(SimulatedNotification, SimulatedCustomer?)]
        if let transactionId = request.transactionId {
            guard let customer = dataset.customer(owning: transactionId) else { throw .transactionIdNotFound() }
            candidates = customer.notifications.map { ($0, customer) }
        } else {
            candidates = dataset.customers.flatMap { customer in customer.notifications.map { ($0, customer) } }
        }
        let matching = candidates.filter { notification, _ in
            notification.date >= request.startDate && notification.date <= request.endDate
                && (request.notificationType == nil || notification.notificationType == request.notificationType)
                && (request.notificationSubtype == nil || notification.subtype == request.notificationSubtype)
                && (!request.onlyFailures || notification.neverDelivered)
        }.sorted { ($0.0.date, $0.0.notificationUUID) < ($1.0.date, $1.0.notificationUUID) }
        let page = matching.dropFirst(offset).prefix(Self.pageSize)
        var items: [OrderedJSON] = []
        for (position, (notification, customer)) in page.enumerated() {
            let attempts = notification.sendAttempts.filter { $0.attemptDate <= now.millisecondsSince1970 }
            var signed = try signer.notification(notification, customer: customer)
            if position + 1 == forgedPosition { signed = Self.forged(signed) }
            items.append(
                .object([
                    ("sendAttempts", .array(attempts.map(\.json))), ("signedPayload", .string(signed)),
                ]))
        }
        let next = PaginationCursor(
            issuedAt: now.millisecondsSince1970, offset: offset + page.count,
            fingerprint: PaginationTokenCodec.digest(request.fingerprint))
        return .object([
            ("paginationToken", .string(tokens.encode(next))), ("hasMore", .bool(offset + page.count < matching.count)),
            ("notificationHistory", .array(items)),
        ])
    }
}
