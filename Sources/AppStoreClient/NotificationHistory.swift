import AppStoreDomain
import GatewayFoundation

/// One page of Get Notification History, as Apple sent it (Apple's App Store Server API documentation).
package struct NotificationHistoryPage: Sendable, Hashable {
    /// One delivery attempt (Apple's sendAttemptItem).
    package struct SendAttempt: Sendable, Hashable {
        /// `attemptDate`, UNIX ms (0 when absent).
        package var attemptDate: Int64
        /// `sendAttemptResult` exactly as sent (empty when absent).
        package var result: String
        /// An attempt.
        package init(attemptDate: Int64, result: String) {
            self.attemptDate = attemptDate
            self.result = result
        }
    }

    /// One notification of the page (Apple's notificationHistoryResponseItem).
    package struct Item: Sendable, Hashable {
        /// The notification JWS exactly as Apple sent it.
        package var signedPayload: String
        /// Every delivery attempt so far, oldest first.
        package var sendAttempts: [SendAttempt]
        /// An item.
        package init(signedPayload: String, sendAttempts: [SendAttempt]) {
            self.signedPayload = signedPayload
            self.sendAttempts = sendAttempts
        }
    }

    /// The token for the next page (empty when Apple sent none).
    package var paginationToken: String
    /// Whether another page follows.
    package var hasMore: Bool
    /// The notifications, at most 20.
    package var items: [Item]
    /// The environment that answered.
    package var environment: AppleEnvironment
    /// Apple's request id of the answer.
    package var appleRequestID: String?

    /// A page.
    package init(
        paginationToken: String, hasMore: Bool, items: [Item], environment: AppleEnvironment,
        appleRequestID: String? = nil
    ) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.items = items
        self.environment = environment
        self.appleRequestID = appleRequestID
    }
}

extension AppStoreAPIClient {
    /// `POST /inApps/v1/notifications/history[?paginationToken=…]` with `body` for `app`: the same body on
    /// every page, the previous page's token in the query. Every page spends a token of the
    /// getNotificationHistory bucket. A body that is not Apple's NotificationHistoryResponse JSON is
    /// `appleDataRejected` (DATA_LOSS).
    package func notificationHistory(
        body: NotificationHistoryRequestBody, paginationToken: String?, app: App,
        environment: AppleEnvironment? = nil, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> NotificationHistoryPage {
        var query = ""
        if let paginationToken, !paginationToken.isEmpty {
            query = "paginationToken=" + PercentEncoding.encode(paginationToken)
        }
        let answer = try await call(
            .getNotificationHistory, path: AppleEndpoint.getNotificationHistory.pathTemplate, query: query,
            body: Array(body.json.utf8), app: app, environment: environment, deadline: deadline)
        guard let object = JSONObject(parsing: answer.response.body), let wire = try? NotificationHistoryWire(object)
        else {
            throw .appleDataRejected(
                app: app.name, environment: answer.environment,
                problem: "the notification history answer (apple request id \(answer.appleRequestID ?? "none")) "
                    + "is not a NotificationHistoryResponse JSON object")
        }
        let items = (wire.notificationHistory ?? []).map { item in
            NotificationHistoryPage.Item(
                signedPayload: item.signedPayload ?? "",
                sendAttempts: (item.sendAttempts ?? []).map {
                    NotificationHistoryPage.SendAttempt(
                        attemptDate: $0.attemptDate ?? 0, result: $0.sendAttemptResult ?? "")
                })
        }
        return NotificationHistoryPage(
            paginationToken: wire.paginationToken ?? "", hasMore: wire.hasMore ?? false, items: items,
            environment: answer.environment, appleRequestID: answer.appleRequestID)
    }
}

/// NotificationHistoryResponse on the wire; every field optional so a missing one is not fatal, one of another
/// type is.
private struct NotificationHistoryWire: AppleJSONShape {
    var paginationToken: String?
    var hasMore: Bool?
    var notificationHistory: [AppleNotificationDeliveries]?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        paginationToken = try object.string("paginationToken")
        hasMore = try object.bool("hasMore")
        notificationHistory = try object.objects("notificationHistory")?.map { item throws(JSONFieldMismatch) in
            try AppleNotificationDeliveries(item)
        }
    }
}

/// A notification with its delivery attempts on the wire, as Apple sends it both in the notification history
/// (notificationHistoryResponseItem) and as a test notification's status (CheckTestNotificationResponse).
package struct AppleNotificationDeliveries: AppleJSONShape, Sendable {
    /// One delivery attempt (sendAttemptItem).
    package struct Attempt: Sendable {
        package var attemptDate: Int64?
        package var sendAttemptResult: String?
    }
    package var signedPayload: String?
    package var sendAttempts: [Attempt]?

    package init(_ object: JSONObject) throws(JSONFieldMismatch) {
        signedPayload = try object.string("signedPayload")
        sendAttempts = try object.objects("sendAttempts")?.map { attempt throws(JSONFieldMismatch) in
            Attempt(
                attemptDate: try attempt.int64("attemptDate"),
                sendAttemptResult: try attempt.string("sendAttemptResult"))
        }
    }
}
