import AppStoreDomain
import GatewayFoundation

/// One page of Get Transaction History (V2), as Apple sent it (Apple's App Store Server API documentation).
package struct TransactionHistoryPage: Sendable, Hashable {
    /// The token for the next page (and, with `hasMore` false, for later incremental reads).
    package var revision: String
    /// Whether another page follows.
    package var hasMore: Bool
    /// The app's bundle id.
    package var bundleId: String
    /// The app's Apple id (0 when Apple sent none, as in sandbox for unreleased apps).
    package var appAppleId: Int64
    /// The environment that answered.
    package var environment: AppleEnvironment
    /// Apple's `environment` field as sent ("Production", "Sandbox"; empty when absent).
    package var environmentName: String
    /// The JWS transactions, at most 20.
    package var signedTransactions: [String]
    /// Apple's request id of the answer.
    package var appleRequestID: String?

    /// A page.
    package init(
        revision: String, hasMore: Bool, bundleId: String, appAppleId: Int64, environment: AppleEnvironment,
        signedTransactions: [String], appleRequestID: String? = nil, environmentName: String = ""
    ) {
        self.environmentName = environmentName
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
        self.appleRequestID = appleRequestID
    }
}

extension AppStoreAPIClient {
    /// `GET /inApps/v2/history/{transactionId}` with `query` for `app`. A body that is not Apple's
    /// HistoryResponse JSON is `appleDataRejected` (DATA_LOSS).
    package func transactionHistory(
        transactionID: String, query: TransactionHistoryQuery, app: App,
        environment: AppleEnvironment? = nil, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> TransactionHistoryPage {
        try query.validate()
        guard !transactionID.isEmpty, let path = AppleEndpoint.getTransactionHistory.path(transactionID) else {
            throw .invalidArgument(field: "transaction_id", problem: "is required")
        }
        let answer = try await call(
            .getTransactionHistory, path: path, query: query.queryString, app: app, environment: environment,
            deadline: deadline)
        guard let object = JSONObject(parsing: answer.response.body), let wire = try? HistoryWire(object) else {
            throw .appleDataRejected(
                app: app.name, environment: answer.environment,
                problem: "the transaction history answer (apple request id \(answer.appleRequestID ?? "none")) "
                    + "is not a HistoryResponse JSON object")
        }
        return TransactionHistoryPage(
            revision: wire.revision ?? "", hasMore: wire.hasMore ?? false, bundleId: wire.bundleId ?? "",
            appAppleId: wire.appAppleId ?? 0, environment: answer.environment,
            signedTransactions: wire.signedTransactions ?? [], appleRequestID: answer.appleRequestID,
            environmentName: wire.environment ?? "")
    }
}

/// HistoryResponse on the wire; every field optional so a missing one is not fatal, one of another type is.
private struct HistoryWire: AppleJSONShape {
    var revision: String?
    var hasMore: Bool?
    var bundleId: String?
    var appAppleId: Int64?
    var environment: String?
    var signedTransactions: [String]?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        revision = try object.string("revision")
        hasMore = try object.bool("hasMore")
        bundleId = try object.string("bundleId")
        appAppleId = try object.int64("appAppleId")
        environment = try object.string("environment")
        signedTransactions = try object.strings("signedTransactions")
    }
}
