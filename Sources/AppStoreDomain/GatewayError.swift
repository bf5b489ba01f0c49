import GatewayFoundation

/// Every way a gateway RPC can fail, as typed values. This module knows nothing of gRPC: the one mapping
/// to a gRPC status is `rpcStatus` in Services (GatewayError+RPCStatus.swift); no layer decides a status
/// code from text.
package enum GatewayError: Error, Sendable, Hashable {
    /// The caller's request is malformed: `field` names what to fix, `problem` says how.
    case invalidArgument(field: String, problem: String)
    /// The request breaks the contract's limits in one or more fields (sizes, counts, id syntax, dates):
    /// INVALID_ARGUMENT with every violation as google.rpc.BadRequest, found before any work is done.
    case badRequest([InvalidField])
    /// Every chain-validation worker is busy and its queue is full (a flood of uncached chains): the
    /// caller should retry after `retryAfter`.
    case verificationBusy(retryAfter: Duration)
    /// The `app` in the request matches no configured app name or bundle id.
    case unknownApp(String)
    /// Apple answered with an error that has no more specific case below.
    case appleAPI(AppleFailure)
    /// Apple answered 404 in every environment the app allows; `tried` lists them in order.
    case appleNotFound(AppleFailure, tried: [AppleEnvironment])
    /// No request may go out now: the local token bucket is empty, or Apple answered 429.
    case rateLimited(RateLimitRefusal)
    /// Apple could not be reached or kept failing with retryable errors until retries ran out.
    case upstreamUnavailable(UpstreamOutage)
    /// Apple refused our credentials (401) or the app's access (403 without a specific code).
    case upstreamAuthentication(AppleFailure)
    /// The caller's deadline passed, or too little of it remained to start an Apple call.
    case deadlineExceeded(whileDoing: String)
    /// The caller cancelled the RPC.
    case cancelled
    /// Apple's answer carried signed data that failed verification (bad signature or chain, wrong app
    /// or environment): the data cannot be trusted, so none of the answer is returned.
    case appleDataRejected(app: String, environment: AppleEnvironment, problem: String)
    /// Online checks could not learn a certificate's revocation status (its OCSP responder is unreachable or
    /// answered unusably): nothing is known to be wrong with the data, the call may succeed later.
    case revocationStatusUnavailable(app: String, problem: String)
    /// Apple no longer accepts the pagination token a stream was resumed from (4000017, PaginationTokenExpired):
    /// the caller must start a new stream from a date. `restartFrom` is the signed date (UNIX ms) of the last
    /// event the caller received, when known.
    case resumeCursorExpired(app: String, environment: AppleEnvironment, restartFrom: Int64?)
    /// The resume token is genuine but was issued longer ago than `notifications.resumeTokenMaxAge`
    /// (`maxAgeMilliseconds`): the caller starts a new stream from a date. `restartFrom` is the signed date
    /// (UNIX ms) of the event the token follows, when the token names it.
    case resumeTokenExpired(issuedAt: Int64, maxAgeMilliseconds: Int64, restartFrom: Int64?)
    /// The server is shutting down and ends the call; the caller should call again (another replica).
    case serverShuttingDown
    /// The caller sent no credentials, or credentials that do not verify (bearer JWT or client certificate).
    case unauthenticated(AuthenticationFailure)
    /// The caller is authenticated but not allowed this call: not in `callers`, or not for this app.
    case permissionDenied(AccessRefusal)
    /// The webhook's notification store (SQLite file or Redis) failed; a followed stream ends, to be resumed.
    case notificationStoreUnavailable(String)
    /// The subscription state holds no such subscription and Apple's answer did not either.
    case subscriptionNotFound(originalTransactionId: String)
    /// The store that keeps the subscription state failed (disk, database): retry shortly.
    case stateStoreUnavailable(String)
    /// This gateway keeps no subscription state (its notification store cannot hold it): the reason says why.
    case stateNotKept(String)
    /// A bug in the gateway; `requestID` ties the status to the log line.
    case internalBug(String, requestID: String?)
}

/// One invalid field of a request: its path in the request (e.g. `product_ids[3]`) and why it is refused.
package struct InvalidField: Sendable, Hashable {
    /// The field's path, e.g. `product_types` or `product_ids[3]`.
    package var field: String
    /// Why the value is refused.
    package var problem: String
    package init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }
}

/// What is known about one failed Apple call.
package struct AppleFailure: Sendable, Hashable {
    /// The HTTP status Apple answered with.
    package var httpStatus: Int
    /// The `errorCode` from the JSON body, when there was one.
    package var code: AppleErrorCode?
    /// Apple's `errorMessage`, when there was one.
    package var appleMessage: String?
    /// The environment that answered.
    package var environment: AppleEnvironment
    /// The configured app name the call was made for.
    package var app: String
    /// Apple's request id header (`apple-request-id` / `x-apple-request-uuid`), when present.
    package var appleRequestID: String?

    /// A failure record; only the status, environment and app are required.
    package init(
        httpStatus: Int, code: AppleErrorCode? = nil, appleMessage: String? = nil,
        environment: AppleEnvironment, app: String, appleRequestID: String? = nil
    ) {
        self.httpStatus = httpStatus
        self.code = code
        self.appleMessage = appleMessage
        self.environment = environment
        self.app = app
        self.appleRequestID = appleRequestID
    }
}

/// Why a request was held back for rate limiting, and for how long.
package struct RateLimitRefusal: Sendable, Hashable {
    /// Who refused: our own bucket, or Apple with a 429.
    package enum Source: Sendable, Hashable {
        /// The gateway's token bucket for (app, endpoint, environment) would need too long a wait.
        case localBucket
        /// Apple answered 429 (4290000).
        case apple(appleRequestID: String?)
    }
    /// Who refused.
    package var source: Source
    /// How long until a request can be admitted.
    package var retryAfter: Duration
    /// The app whose budget is spent.
    package var app: String
    /// The endpoint, by its config name.
    package var endpoint: String
    /// The environment whose budget is spent.
    package var environment: AppleEnvironment

    /// A refusal record.
    package init(
        source: Source, retryAfter: Duration, app: String, endpoint: String, environment: AppleEnvironment
    ) {
        self.source = source
        self.retryAfter = retryAfter
        self.app = app
        self.endpoint = endpoint
        self.environment = environment
    }
}

/// Apple was unreachable or kept failing transiently.
package struct UpstreamOutage: Sendable, Hashable {
    /// What the last attempt ran into, e.g. "connection reset" or an Apple code's name.
    package var lastProblem: String
    /// How many attempts were made.
    package var attempts: Int
    /// The app the call was made for.
    package var app: String
    /// The environment called.
    package var environment: AppleEnvironment
    /// The last Apple code seen, if the last attempt got an answer.
    package var lastAppleCode: AppleErrorCode?
    /// Apple's request id of the last answer, if any.
    package var appleRequestID: String?

    /// An outage record.
    package init(
        lastProblem: String, attempts: Int, app: String, environment: AppleEnvironment,
        lastAppleCode: AppleErrorCode? = nil, appleRequestID: String? = nil
    ) {
        self.lastProblem = lastProblem
        self.attempts = attempts
        self.app = app
        self.environment = environment
        self.lastAppleCode = lastAppleCode
        self.appleRequestID = appleRequestID
    }
}
