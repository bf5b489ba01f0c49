import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// The Retention Messaging API's configuration: default messages per product and locale, the realtime URL, and the
/// realtime URL's performance test.
extension AppleOperation where Request == ConfigureDefaultMessageRequest, Response == ConfigureDefaultMessageResponse {
    static var configureDefaultMessage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.productAndLocale(request.productId, request.locale)
            contract.uuid(request.messageIdentifier, field: "message_identifier", required: true)
            try contract.check()
            return AppleRequest(
                .configureDefaultMessage, pathValues: [request.productId, request.locale],
                body: AppleJSONBody.encode(["messageIdentifier": .string(request.messageIdentifier.lowercased())]),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            ConfigureDefaultMessageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == DeleteDefaultMessageRequest, Response == DeleteDefaultMessageResponse {
    static var deleteDefaultMessage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.productAndLocale(request.productId, request.locale)
            try contract.check()
            return AppleRequest(
                .deleteDefaultMessage, pathValues: [request.productId, request.locale],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            DeleteDefaultMessageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == GetDefaultMessageRequest, Response == GetDefaultMessageResponse {
    static var getDefaultMessage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.productAndLocale(request.productId, request.locale)
            try contract.check()
            return AppleRequest(
                .getDefaultMessage, pathValues: [request.productId, request.locale],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(MessageIdentifierWire.self, what: "default message")
            return GetDefaultMessageResponse(environment: answer.environment, messageIdentifier: wire.identifier ?? "")
        }
    }
}

extension AppleOperation where Request == ConfigureRealtimeUrlRequest, Response == ConfigureRealtimeUrlResponse {
    static var configureRealtimeUrl: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            if request.realtimeUrl.isEmpty {
                contract.refuse("realtime_url", "is required")
            } else if !RetentionMessagingLimits.isRealtimeURL(request.realtimeUrl) {
                contract.refuse(
                    "realtime_url",
                    "must be an https:// URL with a host, at most "
                        + "\(RetentionMessagingLimits.realtimeURLCharacters) characters, without spaces "
                        + "(Apple takes no other)")
            }
            try contract.check()
            return AppleRequest(
                .configureRealtimeUrl, body: AppleJSONBody.encode(["realtimeURL": .string(request.realtimeUrl)]),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            ConfigureRealtimeUrlResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == DeleteRealtimeUrlRequest, Response == DeleteRealtimeUrlResponse {
    static var deleteRealtimeUrl: Self {
        Self(app: \.app) { request throws(GatewayError) in
            AppleRequest(.deleteRealtimeUrl, environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            DeleteRealtimeUrlResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == GetRealtimeUrlRequest, Response == GetRealtimeUrlResponse {
    static var getRealtimeUrl: Self {
        Self(app: \.app) { request throws(GatewayError) in
            AppleRequest(.getRealtimeUrl, environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(RealtimeURLWire.self, what: "realtime URL")
            return GetRealtimeUrlResponse(environment: answer.environment, realtimeUrl: wire.url ?? "")
        }
    }
}

extension AppleOperation where Request == InitiatePerformanceTestRequest, Response == InitiatePerformanceTestResponse {
    static var initiatePerformanceTest: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.transactionID(request.originalTransactionId, field: "original_transaction_id", required: true)
            try contract.check()
            return AppleRequest(
                .initiatePerformanceTest,
                body: AppleJSONBody.encode(["originalTransactionId": .string(request.originalTransactionId)]),
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(PerformanceTestWire.self, what: "performance test")
            return InitiatePerformanceTestResponse(
                environment: answer.environment, config: wire.config, requestId: wire.requestID ?? "")
        }
    }
}

extension AppleOperation
where Request == GetPerformanceTestResultsRequest, Response == GetPerformanceTestResultsResponse {
    static var getPerformanceTestResults: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.segment(request.requestId, field: "request_id", max: RequestContract.maxRequestIdentifierBytes)
            try contract.check()
            return AppleRequest(
                .getPerformanceTestResults, pathValues: [request.requestId],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(PerformanceTestResultWire.self, what: "performance test results")
            let result = wire.result ?? ""
            return GetPerformanceTestResultsResponse(
                environment: answer.environment, config: wire.config, target: wire.target ?? "",
                result: PerformanceTestStatus(apple: result), resultRaw: result, successRate: wire.successRate ?? 0,
                numPending: wire.numPending ?? 0, responseTimes: wire.responseTimes,
                failures: wire.failures.map { reason, count in
                    PerformanceTestFailure(
                        result: StreamNotificationsHandler.sendAttemptResults[reason] ?? .unspecified,
                        resultRaw: reason, count: count)
                })
        }
    }
}

extension RequestContract {
    /// Bytes of a locale path segment.
    static let maxLocaleBytes = 64

    /// A default message's product id (one path segment) and locale (`RetentionMessagingLimits.isLocale`).
    mutating func productAndLocale(_ productID: String, _ locale: String) {
        segment(productID, field: "product_id", max: Self.maxIdentifierBytes)
        if locale.isEmpty {
            refuse("locale", "is required (e.g. en-US)")
        } else if locale.utf8.count > Self.maxLocaleBytes || !RetentionMessagingLimits.isLocale(locale) {
            refuse(
                "locale",
                "must be one of the App Store's locale codes, spelled exactly (case-sensitive, '-'): "
                    + RetentionMessagingLimits.locales.sorted().joined(separator: ", "))
        }
    }
}

extension PerformanceTestStatus {
    /// Apple's PerformanceTestStatus; unknown values are UNSPECIFIED.
    init(apple: String) {
        switch apple {
        case "PENDING": self = .pending
        case "PASS": self = .pass
        case "FAIL": self = .fail
        default: self = .unspecified
        }
    }
}

/// DefaultConfigurationResponse on the wire.
private struct MessageIdentifierWire: AppleJSONShape {
    var identifier: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) { identifier = try object.string("messageIdentifier") }
}

/// RealtimeUrlResponse on the wire.
private struct RealtimeURLWire: AppleJSONShape {
    var url: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) { url = try object.string("realtimeURL") }
}

/// PerformanceTestResponse on the wire.
private struct PerformanceTestWire: AppleJSONShape {
    var config: PerformanceTestConfig?
    var requestID: String?

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        config = try nestedObject(object, "config").map(performanceTestConfig)
        requestID = try object.string("requestId")
    }
}

/// PerformanceTestResultResponse on the wire.
private struct PerformanceTestResultWire: AppleJSONShape {
    var config: PerformanceTestConfig?
    var target: String?
    var result: String?
    var successRate: Int64?
    var numPending: Int64?
    var responseTimes: PerformanceTestResponseTimes?
    /// `failures` by reason, sorted.
    var failures: [(String, Int64)]

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        config = try nestedObject(object, "config").map(performanceTestConfig)
        target = try object.string("target")
        result = try object.string("result")
        successRate = try object.int64("successRate")
        numPending = try object.int64("numPending")
        responseTimes = try nestedObject(object, "responseTimes").map { times throws(JSONFieldMismatch) in
            PerformanceTestResponseTimes(
                averageMillis: try times.int64("average") ?? 0, p50Millis: try times.int64("p50") ?? 0,
                p90Millis: try times.int64("p90") ?? 0, p95Millis: try times.int64("p95") ?? 0,
                p99Millis: try times.int64("p99") ?? 0)
        }
        failures = []
        if let counts = try nestedObject(object, "failures") {
            for reason in counts.members.keys.sorted() {
                failures.append((reason, try counts.int64(reason) ?? 0))
            }
        }
    }
}

/// The object at `key` (nil when absent or null; another type is a mismatch).
private func nestedObject(_ object: JSONObject, _ key: String) throws(JSONFieldMismatch) -> JSONObject? {
    guard let value = object.members[key] else { return nil }
    if case .null = value { return nil }
    guard case .object(let members) = value else { throw JSONFieldMismatch(key: key) }
    return JSONObject(members)
}

/// Apple's PerformanceTestConfig.
private func performanceTestConfig(_ object: JSONObject) throws(JSONFieldMismatch) -> PerformanceTestConfig {
    PerformanceTestConfig(
        maxConcurrentRequests: try object.int64("maxConcurrentRequests") ?? 0,
        totalRequests: try object.int64("totalRequests") ?? 0,
        totalDurationMillis: try object.int64("totalDuration") ?? 0,
        responseTimeThresholdMillis: try object.int64("responseTimeThreshold") ?? 0,
        successRateThreshold: try object.int64("successRateThreshold") ?? 0)
}
