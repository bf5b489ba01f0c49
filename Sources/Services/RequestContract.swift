import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// The contract's limits on every request field, checked before any work, token or Apple call: a value
/// past them is INVALID_ARGUMENT with every violation as google.rpc.BadRequest. Counts are checked
/// before elements, so a request with a million values costs one comparison, not a million.
struct RequestContract {
    /// Values per repeated field.
    static let maxRepeatedValues = 100
    /// Bytes of `app` (a configured name or bundle id; Apple's bundle ids are at most 155 characters).
    static let maxAppBytes = 256
    /// Bytes of one product id or subscription group id.
    static let maxIdentifierBytes = 256
    /// Digits of an Apple transaction id (a decimal UInt64 has at most 20).
    static let maxTransactionIDDigits = 20
    /// Bytes of Apple's `revision` paging token.
    static let maxRevisionBytes = 1024
    /// Bytes of a StreamNotifications resume token.
    static let maxResumeTokenBytes = 16_384
    /// Bytes of a notification type or subtype name.
    static let maxNotificationTypeBytes = 64
    /// Violations reported at most (the status must stay small enough for the trailers).
    static let maxViolations = 10

    private(set) var violations: [InvalidField] = []

    /// Throws `.badRequest` with every violation found, if any.
    func check() throws(GatewayError) {
        if !violations.isEmpty { throw .badRequest(violations) }
    }

    mutating func refuse(_ field: String, _ description: String) {
        guard violations.count < Self.maxViolations else { return }
        violations.append(InvalidField(field: field, problem: description))
    }

    mutating func length(_ value: String, field: String, max: Int) {
        if value.utf8.count > max { refuse(field, "must be at most \(max) bytes (got \(value.utf8.count))") }
    }

    /// Apple's transaction ids: 1 to 20 decimal digits, nothing else (so no `.`, `..` or `%2e%2e` path
    /// segment can reach Apple's URL).
    mutating func transactionID(_ value: String, field: String, required: Bool) {
        if value.isEmpty {
            if required { refuse(field, "is required (any transaction id of the customer)") }
            return
        }
        let utf8 = value.utf8
        guard utf8.count <= Self.maxTransactionIDDigits, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            refuse(field, "must be an App Store transaction id: 1 to \(Self.maxTransactionIDDigits) decimal digits")
            return
        }
    }

    /// A repeated string field: at most `maxRepeatedValues` values, each non-empty and at most `maxBytes`.
    mutating func strings(_ values: [String], field: String, maxBytes: Int) {
        guard count(values.count, field: field) else { return }
        for (index, value) in values.enumerated() {
            if value.isEmpty { refuse("\(field)[\(index)]", "must not be empty") }
            length(value, field: "\(field)[\(index)]", max: maxBytes)
        }
    }

    /// Whether `count` values are within `maxRepeatedValues` (refusing the field when not).
    @discardableResult
    mutating func count(_ count: Int, field: String) -> Bool {
        guard count <= Self.maxRepeatedValues else {
            refuse(field, "must hold at most \(Self.maxRepeatedValues) values (got \(count))")
            return false
        }
        return true
    }

    /// A date inside Apple's range (1970-01-01 to 9999-12-31) with valid nanos.
    mutating func date(_ timestamp: ProtoTimestamp?, field: String) {
        guard let timestamp else { return }
        guard timestamp.nanos >= 0, timestamp.nanos < 1_000_000_000,
            AppleDateRange.seconds.contains(timestamp.seconds)
        else {
            refuse(field, "must be a valid date between 1970-01-01 and 9999-12-31")
            return
        }
    }
}

extension GetHistoryRequest {
    /// The contract's limits on a GetHistory request.
    func checkContract() throws(GatewayError) {
        var contract = RequestContract()
        contract.length(app, field: "app", max: RequestContract.maxAppBytes)
        contract.transactionID(transactionId, field: "transaction_id", required: true)
        contract.length(revision, field: "revision", max: RequestContract.maxRevisionBytes)
        contract.date(startDate, field: "start_date")
        contract.date(endDate, field: "end_date")
        contract.strings(productIds, field: "product_ids", maxBytes: RequestContract.maxIdentifierBytes)
        contract.count(productTypes.count, field: "product_types")
        contract.strings(
            subscriptionGroupIdentifiers, field: "subscription_group_identifiers",
            maxBytes: RequestContract.maxIdentifierBytes)
        try contract.check()
    }
}

extension StreamNotificationsRequest {
    /// The contract's limits on a StreamNotifications request.
    func checkContract() throws(GatewayError) {
        var contract = RequestContract()
        contract.length(app, field: "app", max: RequestContract.maxAppBytes)
        contract.date(startDate, field: "start_date")
        contract.date(endDate, field: "end_date")
        contract.length(notificationType, field: "notification_type", max: RequestContract.maxNotificationTypeBytes)
        contract.length(
            notificationSubtype, field: "notification_subtype", max: RequestContract.maxNotificationTypeBytes)
        contract.transactionID(transactionId, field: "transaction_id", required: false)
        contract.length(resumeToken, field: "resume_token", max: RequestContract.maxResumeTokenBytes)
        try contract.check()
    }
}

extension VerifyJWSRequest {
    /// The contract's limits on a VerifyJWS request (the JWS's own size is a `malformed` verdict).
    func checkContract() throws(GatewayError) {
        var contract = RequestContract()
        contract.length(app, field: "app", max: RequestContract.maxAppBytes)
        try contract.check()
    }
}
