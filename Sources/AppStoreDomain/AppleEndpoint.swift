import GatewayFoundation

/// An HTTP method used by the App Store Server API.
package enum HTTPMethod: String, Sendable, Hashable {
    /// GET.
    case get = "GET"
    /// POST.
    case post = "POST"
    /// PUT.
    case put = "PUT"
    /// DELETE (the Retention Messaging API's deletions; no body).
    case delete = "DELETE"
}

/// Every App Store Server API and Retention Messaging API endpoint (Apple's documentation of each). The case name is
/// the lowerCamelCase config key under `rateLimits` (README, Configuration).
package enum AppleEndpoint: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
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
    /// Retention Messaging: Upload Image.
    case uploadImage
    /// Retention Messaging: Delete Image.
    case deleteImage
    /// Retention Messaging: Get Image List.
    case getImageList
    /// Retention Messaging: Upload Message.
    case uploadMessage
    /// Retention Messaging: Delete Message.
    case deleteMessage
    /// Retention Messaging: Get Message List.
    case getMessageList
    /// Retention Messaging: Configure Default Message.
    case configureDefaultMessage
    /// Retention Messaging: Delete Default Message.
    case deleteDefaultMessage
    /// Retention Messaging: Get Default Message.
    case getDefaultMessage
    /// Retention Messaging: Configure Realtime URL.
    case configureRealtimeUrl
    /// Retention Messaging: Delete Realtime URL.
    case deleteRealtimeUrl
    /// Retention Messaging: Get Realtime URL.
    case getRealtimeUrl
    /// Retention Messaging: Initiate Performance Test.
    case initiatePerformanceTest
    /// Retention Messaging: Get Performance Test Results.
    case getPerformanceTestResults
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
    package var configName: String { rawValue }
    package var description: String { rawValue }

    /// The HTTP method.
    package var method: HTTPMethod {
        switch self {
        case .sendConsumptionInformation, .sendConsumptionInformationV1, .extendSubscriptionRenewalDate,
            .setAppAccountToken, .uploadImage, .uploadMessage, .configureDefaultMessage, .configureRealtimeUrl:
            .put
        case .extendRenewalDatesForAllActiveSubscribers, .getNotificationHistory, .requestTestNotification,
            .finishTransaction, .initiatePerformanceTest, .cancelSubscription, .revokeSubscription,
            .changeSubscriptionPrice, .changeSubscriptionMetadata, .migrateSubscription, .requestTransactionRefund:
            .post
        case .deleteImage, .deleteMessage, .deleteDefaultMessage, .deleteRealtimeUrl:
            .delete
        default:
            .get
        }
    }

    /// The path relative to the base URL, with `{placeholders}` for path parameters.
    package var pathTemplate: String {
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
        case .uploadImage, .deleteImage: "/inApps/v1/messaging/image/{imageIdentifier}"
        case .getImageList: "/inApps/v1/messaging/image/list"
        case .uploadMessage, .deleteMessage: "/inApps/v1/messaging/message/{messageIdentifier}"
        case .getMessageList: "/inApps/v1/messaging/message/list"
        case .configureDefaultMessage, .deleteDefaultMessage, .getDefaultMessage:
            "/inApps/v1/messaging/default/{productId}/{locale}"
        case .configureRealtimeUrl, .deleteRealtimeUrl, .getRealtimeUrl: "/inApps/v1/messaging/realtime/url"
        case .initiatePerformanceTest: "/inApps/v1/messaging/performanceTest"
        case .getPerformanceTestResults: "/inApps/v1/messaging/performanceTest/result/{requestId}"
        case .cancelSubscription: "/advancedCommerce/v1/subscription/cancel/{transactionId}"
        case .revokeSubscription: "/advancedCommerce/v1/subscription/revoke/{transactionId}"
        case .changeSubscriptionPrice: "/advancedCommerce/v1/subscription/changePrice/{transactionId}"
        case .changeSubscriptionMetadata: "/advancedCommerce/v1/subscription/changeMetadata/{transactionId}"
        case .migrateSubscription: "/advancedCommerce/v1/subscription/migrate/{transactionId}"
        case .requestTransactionRefund: "/advancedCommerce/v1/transaction/requestRefund/{transactionId}"
        }
    }

    /// The body's media type: the PNG itself for Upload Image, JSON for every other endpoint with a body.
    package var requestContentType: String { self == .uploadImage ? "image/png" : "application/json" }

    /// Whether the endpoint belongs to the Retention Messaging API.
    package var isRetentionMessaging: Bool {
        switch self {
        case .uploadImage, .deleteImage, .getImageList, .uploadMessage, .deleteMessage, .getMessageList,
            .configureDefaultMessage, .deleteDefaultMessage, .getDefaultMessage, .configureRealtimeUrl,
            .deleteRealtimeUrl, .getRealtimeUrl, .initiatePerformanceTest, .getPerformanceTestResults:
            true
        default:
            false
        }
    }

    /// Apple's published production limit in requests per second (§6). Apple lists none for
    /// Get Status of Subscription Renewal Date Extensions; 1/s, like the mass extension it polls, is assumed.
    /// The Retention Messaging API's table ("Identifying rate limits") gives 10/s for Configure Default Message
    /// and 1/s for each of its other endpoints.
    /// The Advanced Commerce API's table ("Identifying rate limits for Advanced Commerce APIs") gives 5/s for
    /// Cancel a Subscription, Revoke a Subscription and Request Transaction Refund, and 50/s for Change Subscription
    /// Price, Change Subscription Metadata and Migrate a Subscription.
    package var defaultProductionRate: Double {
        switch self {
        case .getTransactionInfo, .getTransactionHistory, .getTransactionHistoryV1, .getAllSubscriptionStatuses,
            .sendConsumptionInformation, .sendConsumptionInformationV1, .getNotificationHistory,
            .getAppTransactionInfo, .finishTransaction, .changeSubscriptionPrice, .changeSubscriptionMetadata,
            .migrateSubscription:
            50
        case .extendSubscriptionRenewalDate, .setAppAccountToken: 20
        case .lookUpOrderId, .getRefundHistory, .getRefundHistoryV1, .configureDefaultMessage: 10
        case .cancelSubscription, .revokeSubscription, .requestTransactionRefund: 5
        case .extendRenewalDatesForAllActiveSubscribers, .getStatusOfSubscriptionRenewalDateExtensions,
            .requestTestNotification, .getTestNotificationStatus, .uploadImage, .deleteImage, .getImageList,
            .uploadMessage, .deleteMessage, .getMessageList, .deleteDefaultMessage, .getDefaultMessage,
            .configureRealtimeUrl, .deleteRealtimeUrl, .getRealtimeUrl, .initiatePerformanceTest,
            .getPerformanceTestResults:
            1
        }
    }

    /// The path with each placeholder replaced, in order, by a percent-encoded segment.
    /// Returns nil when the number of values does not match the placeholders.
    package func path(_ values: String...) -> String? { path(values: values) }

    /// `path(_:)` with the values as an array.
    package func path(values: [String]) -> String? {
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
