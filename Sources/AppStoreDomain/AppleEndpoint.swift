import GatewayFoundation

/// An HTTP method used by the App Store Server API.
public enum HTTPMethod: String, Sendable, Hashable {
    /// GET.
    case get = "GET"
    /// POST.
    case post = "POST"
    /// PUT.
    case put = "PUT"
}

/// Every App Store Server API endpoint (Apple's App Store Server API documentation). The case name is the lowerCamelCase
/// config key under `rateLimits` (README, Configuration).
public enum AppleEndpoint: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Get Transaction Info.
    case getTransactionInfo
    /// Get Transaction History (V2).
    case getTransactionHistory
    /// Get Transaction History V1 (deprecated).
    case getTransactionHistoryV1
    /// Get All Subscription Statuses.
    case getAllSubscriptionStatuses
    /// Look Up Order ID.
    case lookUpOrderId
    /// Get Refund History (V2).
    case getRefundHistory
    /// Get Refund History V1 (deprecated).
    case getRefundHistoryV1
    /// Send Consumption Information (V2).
    case sendConsumptionInformation
    /// Send Consumption Information V1 (deprecated).
    case sendConsumptionInformationV1
    /// Extend a Subscription Renewal Date.
    case extendSubscriptionRenewalDate
    /// Extend Renewal Dates for All Active Subscribers.
    case extendRenewalDatesForAllActiveSubscribers
    /// Get Status of Subscription Renewal Date Extensions.
    case getStatusOfSubscriptionRenewalDateExtensions
    /// Get Notification History.
    case getNotificationHistory
    /// Request a Test Notification.
    case requestTestNotification
    /// Get Test Notification Status.
    case getTestNotificationStatus
    /// Get App Transaction Info.
    case getAppTransactionInfo
    /// Set App Account Token.
    case setAppAccountToken
    /// Finish Transaction.
    case finishTransaction
    /// Advanced Commerce API: Cancel a Subscription.
    case cancelSubscription
    /// Advanced Commerce API: Revoke a Subscription.
    case revokeSubscription
    /// Advanced Commerce API: Change Subscription Price.
    case changeSubscriptionPrice
    /// Advanced Commerce API: Change Subscription Metadata.
    case changeSubscriptionMetadata
    /// Advanced Commerce API: Migrate a Subscription to Advanced Commerce API.
    case migrateSubscription
    /// Advanced Commerce API: Request Transaction Refund.
    case requestTransactionRefund

    /// The config key, e.g. `getTransactionHistory`.
    public var configName: String { rawValue }
    public var description: String { rawValue }

    /// The HTTP method.
    public var method: HTTPMethod {
        switch self {
        case .sendConsumptionInformation, .sendConsumptionInformationV1, .extendSubscriptionRenewalDate,
            .setAppAccountToken:
            .put
        case .extendRenewalDatesForAllActiveSubscribers, .getNotificationHistory, .requestTestNotification,
            .finishTransaction, .cancelSubscription, .revokeSubscription, .changeSubscriptionPrice,
            .changeSubscriptionMetadata, .migrateSubscription, .requestTransactionRefund:
            .post
        default:
            .get
        }
    }

    /// The path relative to the base URL, with `{placeholders}` for path parameters.
    public var pathTemplate: String {
        switch self {
        case .getTransactionInfo: "/inApps/v1/transactions/{transactionId}"
        case .getTransactionHistory: "/inApps/v2/history/{transactionId}"
        case .getTransactionHistoryV1: "/inApps/v1/history/{transactionId}"
        case .getAllSubscriptionStatuses: "/inApps/v1/subscriptions/{transactionId}"
        case .lookUpOrderId: "/inApps/v1/lookup/{orderId}"
        case .getRefundHistory: "/inApps/v2/refund/lookup/{transactionId}"
        case .getRefundHistoryV1: "/inApps/v1/refund/lookup/{originalTransactionId}"
        case .sendConsumptionInformation: "/inApps/v2/transactions/consumption/{transactionId}"
        case .sendConsumptionInformationV1: "/inApps/v1/transactions/consumption/{transactionId}"
        case .extendSubscriptionRenewalDate: "/inApps/v1/subscriptions/extend/{originalTransactionId}"
        case .extendRenewalDatesForAllActiveSubscribers: "/inApps/v1/subscriptions/extend/mass"
        case .getStatusOfSubscriptionRenewalDateExtensions:
            "/inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}"
        case .getNotificationHistory: "/inApps/v1/notifications/history"
        case .requestTestNotification: "/inApps/v1/notifications/test"
        case .getTestNotificationStatus: "/inApps/v1/notifications/test/{testNotificationToken}"
        case .getAppTransactionInfo: "/inApps/v1/transactions/appTransactions/{transactionId}"
        case .setAppAccountToken: "/inApps/v1/transactions/{originalTransactionId}/appAccountToken"
        case .finishTransaction: "/inApps/v1/transactions/{transactionId}/finish"
        case .cancelSubscription: "/advancedCommerce/v1/subscription/cancel/{transactionId}"
        case .revokeSubscription: "/advancedCommerce/v1/subscription/revoke/{transactionId}"
        case .changeSubscriptionPrice: "/advancedCommerce/v1/subscription/changePrice/{transactionId}"
        case .changeSubscriptionMetadata: "/advancedCommerce/v1/subscription/changeMetadata/{transactionId}"
        case .migrateSubscription: "/advancedCommerce/v1/subscription/migrate/{transactionId}"
        case .requestTransactionRefund: "/advancedCommerce/v1/transaction/requestRefund/{transactionId}"
        }
    }

    /// Apple's published production limit in requests per second (§6). Apple lists none for
    /// Get Status of Subscription Renewal Date Extensions; 1/s, like the mass extension it polls, is assumed.
    /// Apple publishes none for the Advanced Commerce API's writes either; 20/s, as the App Store Server API's
    /// per-subscription writes (extend a renewal date, set an app account token), is assumed.
    public var defaultProductionRate: Double {
        switch self {
        case .getTransactionInfo, .getTransactionHistory, .getTransactionHistoryV1, .getAllSubscriptionStatuses,
            .sendConsumptionInformation, .sendConsumptionInformationV1, .getNotificationHistory,
            .getAppTransactionInfo, .finishTransaction:
            50
        case .extendSubscriptionRenewalDate, .setAppAccountToken, .cancelSubscription, .revokeSubscription,
            .changeSubscriptionPrice, .changeSubscriptionMetadata, .migrateSubscription, .requestTransactionRefund:
            20
        case .lookUpOrderId, .getRefundHistory, .getRefundHistoryV1: 10
        case .extendRenewalDatesForAllActiveSubscribers, .getStatusOfSubscriptionRenewalDateExtensions,
            .requestTestNotification, .getTestNotificationStatus:
            1
        }
    }

    /// The path with each placeholder replaced, in order, by a percent-encoded segment.
    /// Returns nil when the number of values does not match the placeholders.
    public func path(_ values: String...) -> String? { path(values: values) }

    /// `path(_:)` with the values as an array.
    public func path(values: [String]) -> String? {
        var remaining = values[...]
        var result = ""
        var template = Substring(pathTemplate)
        while let open = template.firstIndex(of: "{") {
            guard let close = template[open...].firstIndex(of: "}"), let value = remaining.popFirst() else {
                return nil
            }
            result += template[..<open]
            result += PercentEncoding.encode(value)
            template = template[template.index(after: close)...]
        }
        guard remaining.isEmpty else { return nil }
        return result + template
    }
}
