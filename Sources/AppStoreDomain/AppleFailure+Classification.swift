import GatewayFoundation

extension GatewayError {
    /// How long to wait after an Apple 429 that carried no usable `Retry-After`. Default 1 s.
    package static let defaultAppleRetryDelay = Duration.seconds(1)

    /// The error for Apple's final answer `failure` to a call of `endpoint` (after retries and
    /// environment fallback are settled by the caller): 429 becomes `rateLimited` with the delay
    /// from `retryAfter` (capped, see `RetryAfter.delay`), 401 and a 403 without a known code become
    /// `upstreamAuthentication`, everything else `appleAPI`.
    package static func forApple(
        _ failure: AppleFailure, endpoint: AppleEndpoint, retryAfter: WallTime?, now: WallTime
    ) -> GatewayError {
        if failure.httpStatus == 429 || failure.code?.isRateLimited == true {
            let delay = retryAfter.map { RetryAfter.delay(until: $0, from: now) } ?? defaultAppleRetryDelay
            return .rateLimited(
                RateLimitRefusal(
                    source: .apple(appleRequestID: failure.appleRequestID), retryAfter: delay, app: failure.app,
                    endpoint: endpoint.configName, environment: failure.environment))
        }
        if failure.httpStatus == 401 || (failure.httpStatus == 403 && failure.code?.isKnown != true) {
            return .upstreamAuthentication(failure)
        }
        return .appleAPI(failure)
    }
}
