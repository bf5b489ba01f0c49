import AppStoreDomain
import Foundation
import HTTPServer

/// A request matched to an endpoint: which one, in which environment, with its path parameters.
struct SimulatorRoute: Sendable {
    var endpoint: AppleEndpoint
    var environment: AppleEnvironment
    /// Path parameters in template order (percent-decoded).
    var parameters: [String]

    /// The header that picks the environment when one host serves both.
    static let environmentHeader = "x-simulator-environment"

    /// The endpoints the simulator implements; every other path answers 404 with an empty body, as Apple.
    /// More specific templates first: `/subscriptions/extend/mass` before `/subscriptions/extend/{id}`, and
    /// `/transactions/appTransactions/{id}` before `/transactions/{id}`.
    static let served: [AppleEndpoint] = [
        .getTransactionHistory, .getTransactionHistoryV1, .getNotificationHistory, .getAppTransactionInfo,
        .getTransactionInfo, .getAllSubscriptionStatuses, .requestTestNotification, .getTestNotificationStatus,
        .lookUpOrderId, .getRefundHistory, .sendConsumptionInformation, .extendRenewalDatesForAllActiveSubscribers,
        .extendSubscriptionRenewalDate, .getStatusOfSubscriptionRenewalDateExtensions, .setAppAccountToken,
        .finishTransaction, .getImageList, .uploadImage, .deleteImage, .getMessageList, .uploadMessage, .deleteMessage,
        .configureDefaultMessage, .deleteDefaultMessage, .getDefaultMessage, .configureRealtimeUrl, .deleteRealtimeUrl,
        .getRealtimeUrl, .initiatePerformanceTest, .getPerformanceTestResults,
        .cancelSubscription, .revokeSubscription, .changeSubscriptionPrice,
        .changeSubscriptionMetadata, .migrateSubscription, .requestTransactionRefund,
    ]

    /// Matches `request`, or nil (404). The environment comes from a `/sandbox` or `/production` path
    /// prefix, else the `x-simulator-environment` header, else a host whose name contains "sandbox",
    /// else production.
    init?(_ request: HTTPRequest) {
        var segments = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        var environment: AppleEnvironment = .production
        if let first = segments.first, let prefixed = AppleEnvironment(rawValue: first) {
            environment = prefixed
            segments.removeFirst()
        } else if let header = request.header(Self.environmentHeader), let named = AppleEnvironment(rawValue: header) {
            environment = named
        } else if let host = request.header(":authority") ?? request.header("host"), host.contains("sandbox") {
            environment = .sandbox
        }
        for endpoint in Self.served where endpoint.method.rawValue == request.method {
            if let parameters = Self.match(endpoint.pathTemplate, segments) {
                self.endpoint = endpoint
                self.environment = environment
                self.parameters = parameters
                return
            }
        }
        return nil
    }

    private static func match(_ template: String, _ segments: [String]) -> [String]? {
        let pattern = template.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard pattern.count == segments.count else { return nil }
        var parameters: [String] = []
        for (expected, actual) in zip(pattern, segments) {
            if expected.hasPrefix("{") {
                guard !actual.isEmpty else { return nil }
                parameters.append(actual.removingPercentEncoding ?? actual)
            } else if expected != actual {
                return nil
            }
        }
        return parameters
    }
}
