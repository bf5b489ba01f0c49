import AppStoreDomain
import GRPC
import GatewayFoundation

/// The ErrorInfo domain of every status the gateway produces.
package let gatewayErrorDomain = "appstore.gateway"

extension GatewayError: RPCStatusConvertible {
    /// The gRPC status for this error: the single mapping, tabled in README "Status codes".
    ///
    /// Apple's HTTP statuses are mapped by meaning, never with grpc's HTTP-to-gRPC table (that one
    /// is for clients). Apple 401/403 become FAILED_PRECONDITION: the gateway's key or the app's
    /// state is at fault, not the caller's credentials, so UNAUTHENTICATED would mislead.
    package var rpcStatus: RPCStatus {
        switch self {
        case .invalidArgument(let field, let problem):
            return Self.status(
                .invalidArgument, "Invalid \(field): \(problem).",
                reason: "INVALID_ARGUMENT", metadata: ["field": field],
                fieldViolations: [FieldViolation(field: field, description: problem)])
        case .badRequest(let invalid):
            let violations = invalid.map { FieldViolation(field: $0.field, description: $0.problem) }
            let listed = violations.prefix(3).map { "\($0.field): \($0.description)" }.joined(separator: "; ")
            let more = violations.count > 3 ? " (and \(violations.count - 3) more)" : ""
            let message = violations.count == 1 ? "Invalid \(listed)." : "Invalid request: \(listed)\(more)."
            return Self.status(
                .invalidArgument, message, reason: "INVALID_ARGUMENT",
                metadata: ["field": violations.first?.field ?? ""], fieldViolations: violations)
        case .verificationBusy(let retryAfter):
            return Self.status(
                .resourceExhausted,
                "Every JWS chain-validation worker is busy and the queue is full; retry after "
                    + "\(retryAfter.millisecondsRoundedUp) ms.",
                reason: "VERIFICATION_BUSY", metadata: [:], retryAfter: retryAfter)
        case .unknownApp(let app):
            let echoed = EchoedInput.clip(app)  // the caller's text, maybe huge: quoted clipped
            return status(
                .notFound, "No app named \"\(echoed)\" is configured; use an apps[].name or apps[].bundleId.",
                reason: "UNKNOWN_APP", metadata: ["app": echoed])
        case .appleAPI(let failure):
            return Self.status(forApple: failure)
        case .appleNotFound(let failure, let tried):
            let environments = tried.map(\.rawValue).joined(separator: ",")
            var metadata = Self.metadata(failure)
            metadata["environments_tried"] = environments
            return status(
                .notFound,
                "Apple found nothing for app \"\(failure.app)\" in \(environments)\(Self.codeSuffix(failure.code)); "
                    + "check the id and that the app's environment setting covers where the purchase was made.",
                reason: failure.code?.reason ?? "APPLE_NOT_FOUND", metadata: metadata)
        case .rateLimited(let refusal):
            return Self.status(forRateLimit: refusal)
        case .upstreamUnavailable(let outage):
            var metadata = ["app": outage.app, "environment": outage.environment.rawValue]
            metadata["apple_error_code"] = outage.lastAppleCode.map { String($0.rawValue) }
            metadata["apple_error_name"] = outage.lastAppleCode?.name
            metadata["apple_request_id"] = outage.appleRequestID
            return status(
                .unavailable,
                "Apple (\(outage.environment)) is unavailable for app \"\(outage.app)\" after \(outage.attempts) "
                    + "attempt(s), last problem: \(outage.lastProblem); retry later.",
                reason: "UPSTREAM_UNAVAILABLE", metadata: metadata)
        case .upstreamAuthentication(let failure):
            return Self.status(forAuthentication: failure)
        case .deadlineExceeded(let stage):
            return status(
                .deadlineExceeded, "Deadline exceeded while \(stage); allow a longer deadline.",
                reason: "DEADLINE_EXCEEDED", metadata: [:])
        case .cancelled:
            return status(.cancelled, "The call was cancelled by the caller.", reason: "CANCELLED", metadata: [:])
        case .appleDataRejected(let app, let environment, let problem):
            // DATA_LOSS, not INTERNAL: the gateway worked, the upstream data is corrupt or forged, and
            // repeating the call will not help until Apple (or whatever answered as Apple) is fixed.
            return status(
                .dataLoss,
                "Apple's answer for app \"\(app)\" (\(environment)) carried signed data that failed verification: "
                    + "\(problem).",
                reason: "APPLE_DATA_UNVERIFIED", metadata: ["app": app, "environment": environment.rawValue])
        case .revocationStatusUnavailable(let app, let problem):
            return Self.status(
                .unavailable, "Online checks for app \"\(app)\" could not be completed: \(problem).",
                reason: "REVOCATION_STATUS_UNAVAILABLE", metadata: ["app": app], retryAfter: .seconds(1))
        case .resumeCursorExpired(let app, let environment, let restartFrom):
            // FAILED_PRECONDITION, not INVALID_ARGUMENT: the token was valid; repeating it will not help,
            // a new stream from a date will.
            let hint = Self.restartHint(restartFrom)
            var metadata = ["app": app, "environment": environment.rawValue]
            metadata["apple_error_code"] = String(AppleErrorCode.paginationTokenExpired.rawValue)
            metadata["apple_error_name"] = AppleErrorCode.paginationTokenExpired.name
            metadata["restart_from_ms"] = restartFrom.map { String($0) }
            return status(
                .failedPrecondition,
                "Apple's pagination token behind this resume token has expired (4000017); \(hint).",
                reason: "PAGINATION_TOKEN_EXPIRED", metadata: metadata)
        case .resumeTokenExpired(let issuedAt, let maxAge, let restartFrom):
            // INVALID_ARGUMENT with its own reason: the token is refused for its age, not for being garbled.
            let hint = Self.restartHint(restartFrom)
            var metadata = [
                "field": "resume_token", "issued_at_ms": String(issuedAt), "max_age_ms": String(maxAge),
            ]
            metadata["restart_from_ms"] = restartFrom.map { String($0) }
            let problem =
                "has expired (issued at \(issuedAt) ms; this gateway accepts resume tokens for "
                + "\(Self.spoken(milliseconds: maxAge)), notifications.resumeTokenMaxAge)"
            return Self.status(
                .invalidArgument, "Invalid resume_token: \(problem); \(hint).",
                reason: "RESUME_TOKEN_EXPIRED", metadata: metadata,
                fieldViolations: [FieldViolation(field: "resume_token", description: problem)])
        case .serverShuttingDown:
            return status(
                .unavailable, "The gateway is shutting down; call again (another replica will serve the call).",
                reason: "SHUTTING_DOWN", metadata: [:])
        case .unauthenticated(let failure):
            // No metadata echoes the token: a credential never goes back out, even in part.
            return status(
                .unauthenticated, "Not authenticated: \(failure.explanation).",
                reason: "UNAUTHENTICATED", metadata: ["cause": failure.rawValue])
        case .permissionDenied(let refusal):
            switch refusal {
            case .unknownCaller(let identity):
                let echoed = EchoedInput.clip(identity)
                return status(
                    .permissionDenied, "Caller \"\(echoed)\" is not allowed to use this gateway (not in callers).",
                    reason: "UNKNOWN_CALLER", metadata: ["caller": echoed])
            case .appNotAllowed(let identity, let app):
                let (caller, named) = (EchoedInput.clip(identity), EchoedInput.clip(app))
                return status(
                    .permissionDenied, "Caller \"\(caller)\" may not use app \"\(named)\".",
                    reason: "APP_NOT_ALLOWED", metadata: ["caller": caller, "app": named])
            case .permissionNotGranted(let identity, let permission, let method):
                let (caller, called) = (EchoedInput.clip(identity), EchoedInput.clip(method))
                return status(
                    .permissionDenied,
                    "Caller \"\(caller)\" may not call \(called): it needs the \"\(permission)\" permission "
                        + "(callers[].permissions).",
                    reason: "PERMISSION_NOT_GRANTED",
                    metadata: ["caller": caller, "permission": "\(permission)", "method": called])
            }
        case .notificationStoreUnavailable(let problem):
            return Self.status(
                .unavailable, "The gateway's notification store is unavailable (\(problem)); resume the stream later.",
                reason: "NOTIFICATION_STORE_UNAVAILABLE", metadata: [:])
        case .subscriptionNotFound(let id):
            let echoed = EchoedInput.clip(id)
            return status(
                .notFound,
                "No subscription \"\(echoed)\": the gateway's state holds none and Apple knows none by that id.",
                reason: "SUBSCRIPTION_NOT_FOUND", metadata: ["original_transaction_id": echoed])
        case .stateStoreUnavailable(let problem):
            return Self.status(
                .unavailable, "The gateway's subscription state store is unavailable (\(problem)); retry shortly.",
                reason: "STATE_STORE_UNAVAILABLE", metadata: [:], retryAfter: .seconds(1))
        case .stateNotKept(let why):
            return Self.status(
                .failedPrecondition, "This gateway keeps no subscription state: \(why).",
                reason: "SUBSCRIPTION_STATE_NOT_KEPT", metadata: [:])
        case .internalBug(let what, let requestID):
            var metadata: [String: String] = [:]
            metadata["request_id"] = requestID
            return status(
                .internal,
                "Internal gateway error (request id \(requestID ?? "none")): \(what). Report it with the request id.",
                reason: "INTERNAL", metadata: metadata)
        }
    }

    private func status(_ code: StatusCode, _ message: String, reason: String, metadata: [String: String])
        -> RPCStatus
    {
        Self.status(code, message, reason: reason, metadata: metadata)
    }

    /// What a caller whose resume token cannot continue does instead.
    static func restartHint(_ restartFrom: Int64?) -> String {
        restartFrom.map {
            "start a new stream without resume_token, with start_date at the last event's signed date (\($0) ms) "
                + "and skip the notification_uuids already processed"
        } ?? "start a new stream without resume_token from a start_date"
    }

    /// `milliseconds` as an operator wrote it: whole days, hours, minutes or seconds ("30d", "90m").
    static func spoken(milliseconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)]
        where milliseconds >= size && milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    private static func status(
        _ code: StatusCode, _ message: String, reason: String, metadata: [String: String],
        retryAfter: Duration? = nil, fieldViolations: [FieldViolation] = []
    ) -> RPCStatus {
        let info = ErrorDetails.Info(reason: reason, domain: gatewayErrorDomain, metadata: metadata)
        return RPCStatus(
            code, message,
            details: ErrorDetails(
                info: info, retryDelayMilliseconds: retryAfter?.millisecondsRoundedUp,
                fieldViolations: fieldViolations))
    }

    private static func metadata(_ failure: AppleFailure) -> [String: String] {
        var metadata = ["app": failure.app, "environment": failure.environment.rawValue]
        metadata["apple_error_code"] = failure.code.map { String($0.rawValue) }
        metadata["apple_error_name"] = failure.code?.name
        metadata["apple_request_id"] = failure.appleRequestID
        return metadata
    }

    private static func codeSuffix(_ code: AppleErrorCode?) -> String {
        code.map { " (\($0))" } ?? ""
    }

    private static func appleText(_ failure: AppleFailure) -> String {
        let code = failure.code.map { "\($0)" } ?? "HTTP \(failure.httpStatus)"
        let said = failure.appleMessage.map { ": \($0)" } ?? ""
        return "Apple (\(failure.environment)) answered \(code) for app \"\(failure.app)\"\(said)"
    }

    /// Apple errors by code first (their first three digits are the HTTP status), then by HTTP status.
    private static func status(forApple failure: AppleFailure) -> RPCStatus {
        let metadata = metadata(failure)
        let httpStatus = failure.code?.httpStatus ?? failure.httpStatus
        let fallbackReason = "APPLE_HTTP_\(failure.httpStatus)"
        let reason = failure.code?.reason ?? fallbackReason
        if failure.code?.isRateLimited == true || httpStatus == 429 {
            return status(
                .resourceExhausted, appleText(failure) + "; Apple's rate limit is reached, retry later.",
                reason: reason, metadata: metadata)
        }
        if failure.code?.isRetryable == true {
            return status(.unavailable, appleText(failure) + "; retry later.", reason: reason, metadata: metadata)
        }
        switch httpStatus {
        case 400:
            return status(
                .invalidArgument, appleText(failure) + "; fix the request field Apple names.",
                reason: reason, metadata: metadata)
        case 401, 403:
            return Self.status(forAuthentication: failure)
        case 404:
            return status(.notFound, appleText(failure) + ".", reason: reason, metadata: metadata)
        case 409:
            // ImageAlreadyExists, MessageAlreadyExists: the identifier is taken.
            return status(.alreadyExists, appleText(failure) + ".", reason: reason, metadata: metadata)
        case 500...599:
            return status(.unavailable, appleText(failure) + "; retry later.", reason: reason, metadata: metadata)
        default:
            return status(.unknown, appleText(failure) + ".", reason: reason, metadata: metadata)
        }
    }

    /// Our key or the app's state is at fault: FAILED_PRECONDITION with what to check.
    private static func status(forAuthentication failure: AppleFailure) -> RPCStatus {
        let metadata = metadata(failure)
        if let code = failure.code, code.isKnown {
            // A specific 403 (e.g. SubscriptionMaxExtension) is about the subscription, not credentials.
            return status(
                .failedPrecondition, appleText(failure) + ".", reason: code.reason, metadata: metadata)
        }
        let hint =
            failure.httpStatus == 401
            ? "Apple rejected the gateway's token; check issuerId, keyId, privateKeyFile and bundleId in the "
                + "gateway configuration"
            : "Apple refused access; check that the key is an In-App Purchase key of this team and the app is "
                + "available in this environment"
        return status(
            .failedPrecondition,
            "\(hint) (app \"\(failure.app)\", \(failure.environment), HTTP \(failure.httpStatus)).",
            reason: failure.httpStatus == 401 ? "APPLE_AUTHENTICATION_FAILED" : "APPLE_ACCESS_DENIED",
            metadata: metadata)
    }

    private static func status(forRateLimit refusal: RateLimitRefusal) -> RPCStatus {
        var metadata = [
            "app": refusal.app, "environment": refusal.environment.rawValue, "endpoint": refusal.endpoint,
        ]
        let milliseconds = refusal.retryAfter.millisecondsRoundedUp
        switch refusal.source {
        case .localBucket:
            return status(
                .resourceExhausted,
                "Gateway rate limit for \(refusal.endpoint) of app \"\(refusal.app)\" (\(refusal.environment)) "
                    + "is spent; retry after \(milliseconds) ms.",
                reason: "RATE_LIMITED", metadata: metadata, retryAfter: refusal.retryAfter)
        case .apple(let requestID):
            metadata["apple_error_code"] = String(AppleErrorCode.rateLimitExceeded.rawValue)
            metadata["apple_error_name"] = AppleErrorCode.rateLimitExceeded.name
            metadata["apple_request_id"] = requestID
            return status(
                .resourceExhausted,
                "Apple's rate limit for \(refusal.endpoint) of app \"\(refusal.app)\" (\(refusal.environment)) "
                    + "is reached; retry after \(milliseconds) ms.",
                reason: AppleErrorCode.rateLimitExceeded.reason, metadata: metadata, retryAfter: refusal.retryAfter)
        }
    }
}
