import AppStoreDomain
import GRPC
import GatewayFoundation
import Services
import Testing

@Suite struct GatewayErrorStatusTests {
    func apple(_ http: Int, _ code: Int64? = nil, env: AppleEnvironment = .production) -> AppleFailure {
        AppleFailure(
            httpStatus: http, code: code.map(AppleErrorCode.init(rawValue:)), appleMessage: "said so",
            environment: env, app: "example", appleRequestID: "req-1")
    }

    @Test func malformedRequestNamesTheField() {
        let status = GatewayError.invalidArgument(field: "endDate", problem: "must be after startDate").rpcStatus
        #expect(status.code == .invalidArgument)
        #expect(status.message.contains("endDate"))
        #expect(status.details?.info?.metadata["field"] == "endDate")
        #expect(status.details?.info?.domain == "appstore.gateway")
    }

    @Test func appleBadRequestIsInvalidArgumentWithCode() {
        let status = GatewayError.appleAPI(apple(400, 4_000_023)).rpcStatus
        #expect(status.code == .invalidArgument)
        #expect(status.details?.info?.reason == "INVALID_PRODUCT_ID")
        #expect(
            status.details?.info?.metadata
                == [
                    "apple_error_code": "4000023", "apple_error_name": "InvalidProductId",
                    "environment": "production", "app": "example", "apple_request_id": "req-1",
                ])
        #expect(status.message.contains("InvalidProductId"))
    }

    @Test func unverifiableAppleDataIsDataLoss() {
        let status = GatewayError.appleDataRejected(app: "example", environment: .sandbox, problem: "bad signature")
            .rpcStatus
        #expect(status.code == .dataLoss)
        #expect(status.details?.info?.reason == "APPLE_DATA_UNVERIFIED")
        #expect(status.message.contains("bad signature"))
    }

    @Test func unknownAppAndMethod() {
        #expect(GatewayError.unknownApp("nope").rpcStatus.code == .notFound)
        #expect(GatewayError.unknownApp("nope").rpcStatus.details?.info?.reason == "UNKNOWN_APP")
    }

    @Test func notFoundAfterFallbackListsEnvironments() {
        let status = GatewayError.appleNotFound(apple(404, 4_040_010, env: .sandbox), tried: [.production, .sandbox])
            .rpcStatus
        #expect(status.code == .notFound)
        #expect(status.details?.info?.reason == "TRANSACTION_ID_NOT_FOUND")
        #expect(status.details?.info?.metadata["environments_tried"] == "production,sandbox")
        #expect(status.message.contains("production,sandbox"))
        #expect(GatewayError.appleAPI(apple(404, 4_040_005)).rpcStatus.code == .notFound)
        #expect(GatewayError.appleAPI(apple(404)).rpcStatus.code == .notFound)
    }

    @Test func rateLimitsCarryRetryInfo() {
        let local = RateLimitRefusal(
            source: .localBucket, retryAfter: .microseconds(1_500), app: "example",
            endpoint: "getTransactionHistory", environment: .sandbox)
        let localStatus = GatewayError.rateLimited(local).rpcStatus
        #expect(localStatus.code == .resourceExhausted)
        #expect(localStatus.details?.retryDelayMilliseconds == 2)
        #expect(localStatus.details?.info?.reason == "RATE_LIMITED")

        var fromApple = local
        fromApple.source = .apple(appleRequestID: "r")
        fromApple.retryAfter = .seconds(3)
        let appleStatus = GatewayError.rateLimited(fromApple).rpcStatus
        #expect(appleStatus.code == .resourceExhausted)
        #expect(appleStatus.details?.retryDelayMilliseconds == 3_000)
        #expect(appleStatus.details?.info?.metadata["apple_error_code"] == "4290000")
        #expect(GatewayError.appleAPI(apple(429, 4_290_000)).rpcStatus.code == .resourceExhausted)
    }

    @Test(arguments: [Int64(4_040_002), 4_040_004, 4_040_006, 5_000_001])
    func retryableAppleCodesAreUnavailable(code: Int64) {
        let status = GatewayError.appleAPI(apple(Int(code / 10_000), code)).rpcStatus
        #expect(status.code == .unavailable)
    }

    @Test func outageAfterRetriesIsUnavailable() {
        let outage = UpstreamOutage(
            lastProblem: "connection reset", attempts: 3, app: "example", environment: .production)
        let status = GatewayError.upstreamUnavailable(outage).rpcStatus
        #expect(status.code == .unavailable)
        #expect(status.message.contains("3 attempt"))
        #expect(GatewayError.appleAPI(apple(503)).rpcStatus.code == .unavailable)
    }

    @Test func appleAuthFailuresAreFailedPreconditionNeverUnauthenticated() {
        for error in [
            GatewayError.upstreamAuthentication(apple(401)), .upstreamAuthentication(apple(403)),
            .appleAPI(apple(401)), .appleAPI(apple(403, 4_030_005)),
        ] {
            #expect(error.rpcStatus.code == .failedPrecondition)
        }
        #expect(GatewayError.appleAPI(apple(401)).rpcStatus.message.contains("keyId"))
        #expect(
            GatewayError.appleAPI(apple(403, 4_030_005)).rpcStatus.details?.info?.reason == "SUBSCRIPTION_MAX_EXTENSION"
        )
    }

    @Test func deadlineCancelSizeAndBugs() {
        #expect(GatewayError.deadlineExceeded(whileDoing: "waiting for Apple").rpcStatus.code == .deadlineExceeded)
        #expect(GatewayError.cancelled.rpcStatus.code == .cancelled)
        let bug = GatewayError.internalBug("nil page", requestID: "abc").rpcStatus
        #expect(bug.code == .internal)
        #expect(bug.details?.info?.metadata["request_id"] == "abc")
        #expect(bug.message.contains("abc"))
    }

    @Test func appleGeneralInternalIsUnavailable() {
        #expect(GatewayError.appleAPI(apple(500, 5_000_000)).rpcStatus.code == .unavailable)
        #expect(GatewayError.appleAPI(apple(418)).rpcStatus.code == .unknown)
    }
}

@Suite struct AppleFailureClassificationTests {
    let now = WallTime(millisecondsSince1970: 1_750_000_000_000)

    func failure(_ http: Int, _ code: AppleErrorCode? = nil) -> AppleFailure {
        AppleFailure(httpStatus: http, code: code, environment: .production, app: "example", appleRequestID: "r")
    }

    @Test func rateLimitUsesRetryAfterOrDefault() {
        let withHeader = GatewayError.forApple(
            failure(429, .rateLimitExceeded), endpoint: .getTransactionInfo,
            retryAfter: now + .milliseconds(2_500), now: now)
        guard case .rateLimited(let refusal) = withHeader else {
            Issue.record("expected rateLimited, got \(withHeader)")
            return
        }
        #expect(refusal.retryAfter == .milliseconds(2_500))
        #expect(refusal.source == .apple(appleRequestID: "r"))
        #expect(refusal.endpoint == "getTransactionInfo")
        let withoutHeader = GatewayError.forApple(
            failure(429), endpoint: .getTransactionInfo, retryAfter: nil, now: now)
        #expect(withoutHeader.rpcStatus.details?.retryDelayMilliseconds == 1_000)
    }

    @Test func authenticationAndOtherAnswers() {
        #expect(
            GatewayError.forApple(failure(401), endpoint: .getTransactionInfo, retryAfter: nil, now: now)
                == .upstreamAuthentication(failure(401)))
        #expect(
            GatewayError.forApple(failure(403), endpoint: .getTransactionInfo, retryAfter: nil, now: now)
                == .upstreamAuthentication(failure(403)))
        let extension403 = failure(403, AppleErrorCode(rawValue: 4_030_005))
        #expect(
            GatewayError.forApple(extension403, endpoint: .extendSubscriptionRenewalDate, retryAfter: nil, now: now)
                == .appleAPI(extension403))
        #expect(
            GatewayError.forApple(
                failure(400, .generalBadRequest), endpoint: .getTransactionInfo, retryAfter: nil, now: now
            )
            .rpcStatus.code == .invalidArgument)
    }
}
