import GatewayFoundation

/// The JSON body of Get Notification History (Apple's App Store Server API documentation).
package struct NotificationHistoryRequestBody: Sendable, Hashable {
    /// Earliest notification time, UNIX ms (required).
    package var startDate: Int64
    /// Latest notification time, UNIX ms (required; Apple clamps a future value to now).
    package var endDate: Int64
    /// One V2 `notificationType`, or nil.
    package var notificationType: String?
    /// One `subtype`; only with `notificationType`.
    package var notificationSubtype: String?
    /// Restricts to one customer's history; excludes `notificationType`.
    package var transactionId: String?
    /// Only notifications that never reached the server; sent only when true (false is Apple's default).
    package var onlyFailures: Bool

    /// A body; empty strings count as unset, as proto3 callers send them.
    package init(
        startDate: Int64, endDate: Int64, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil, onlyFailures: Bool = false
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType?.isEmpty == true ? nil : notificationType
        self.notificationSubtype = notificationSubtype?.isEmpty == true ? nil : notificationSubtype
        self.transactionId = transactionId?.isEmpty == true ? nil : transactionId
        self.onlyFailures = onlyFailures
    }

    /// How far back Apple keeps notification history: 180 days in production, 30 in sandbox.
    package static func retention(in environment: AppleEnvironment) -> Duration {
        switch environment {
        case .production: .seconds(180 * 86_400)
        case .sandbox: .seconds(30 * 86_400)
        }
    }

    /// The JSON text, keys in a fixed order, unset fields omitted.
    package var json: String {
        var members: [(String, String)] = [("startDate", String(startDate)), ("endDate", String(endDate))]
        if let notificationType { members.append(("notificationType", JSONText.quoted(notificationType))) }
        if let notificationSubtype { members.append(("notificationSubtype", JSONText.quoted(notificationSubtype))) }
        if let transactionId { members.append(("transactionId", JSONText.quoted(transactionId))) }
        if onlyFailures { members.append(("onlyFailures", "true")) }
        return JSONText.object(members)
    }

    /// Rejects what Apple would answer with a 400 (4000012/13/18/19), naming the field to fix.
    /// `now` and `environment` decide the retention window for `startDate`.
    package func validate(now: WallTime, environment: AppleEnvironment) throws(GatewayError) {
        guard endDate > startDate else {
            throw .invalidArgument(field: "endDate", problem: "must be later than startDate")
        }
        let oldest = now - Self.retention(in: environment)
        guard startDate >= oldest.millisecondsSince1970 else {
            let days = Self.retention(in: environment).components.seconds / 86_400
            throw .invalidArgument(
                field: "startDate",
                problem: "must be within the last \(days) days, Apple's \(environment) retention")
        }
        if notificationType != nil, transactionId != nil {
            throw .invalidArgument(
                field: "transactionId", problem: "cannot be combined with notificationType; send one or neither")
        }
        if notificationSubtype != nil, notificationType == nil {
            throw .invalidArgument(field: "notificationSubtype", problem: "requires notificationType")
        }
        for (field, value) in [("notificationType", notificationType), ("notificationSubtype", notificationSubtype)] {
            if let value, !Self.isEnumSpelling(value) {
                throw .invalidArgument(field: field, problem: "must be an UPPER_SNAKE value such as DID_RENEW")
            }
        }
    }

    private static func isEnumSpelling(_ value: String) -> Bool {
        value.utf8.allSatisfy { (0x41...0x5A).contains($0) || $0 == UInt8(ascii: "_") }
    }
}
