import AppStoreDomain
import GatewayFoundation
import Logging

/// The attempts of one Apple call in one environment: rate-limit reservation, JWT, HTTP, retry decision.
///
/// Returns Apple's 2xx response, or Apple's final error answer (for the caller to decide on environment
/// fallback); throws for what ends the call outright (rate limits, deadline, cancellation, outage).
struct AppleCall {
    let client: AppStoreAPIClient
    let endpoint: AppleEndpoint
    let path: String
    let query: String
    let body: [UInt8]?
    let app: App
    let environment: AppleEnvironment
    let deadline: MonotonicInstant?

    private var key: RateLimitKey { RateLimitKey(bundleID: app.bundleId, endpoint: endpoint, environment: environment) }
    private var identity: JWTIdentity {
        JWTIdentity(issuerID: app.issuerId, keyID: app.keyId, bundleID: app.bundleId)
    }
    private var url: String {
        client.settings.baseURL(environment) + path + (query.isEmpty ? "" : "?" + query)
    }

    /// The attempts, recorded as one CLIENT span (a child of the call's trace; retries are its events) when
    /// the call's trace is sampled.
    func run() async throws(GatewayError) -> AppleCallOutcome {
        var span = client.tracer.childSpan(
            of: TraceContext.current, name: "\(endpoint.method.rawValue) \(endpoint.configName)", kind: .client)
        span?.set("http.request.method", endpoint.method.rawValue)
        span?.set("server.address", AppleSpan.host(of: client.settings.baseURL(environment)))
        span?.set("appstore.endpoint", endpoint.configName)
        span?.set("appstore.environment", environment.rawValue)
        span?.set("appstore.app", app.name)
        do {
            let outcome = try await attempts(&span)
            if case .refused(let final) = outcome {
                span?.status = .error("Apple answered HTTP \(final.failure.httpStatus)")
            }
            client.tracer.end(span)
            return outcome
        } catch {
            span?.status = .error(AppleSpan.problem(error))
            client.tracer.end(span)
            throw error
        }
    }

    private func attempts(_ span: inout SpanRecord?) async throws(GatewayError) -> AppleCallOutcome {
        let clock = client.clock
        var schedule = RetrySchedule(policy: client.settings.retryPolicy, deadline: deadline)
        var random = SystemRandomNumberGenerator()
        var remintedAfter401 = false
        var lastProblem = "no attempt made"
        var lastCode: AppleErrorCode?
        var lastRequestID: String?
        var lastWasTimeout = false

        while true {
            if Task.isCancelled { throw .cancelled }
            let now = clock.monotonicNow()
            guard schedule.mayStartAttempt(now: now) else {
                if schedule.attemptsMade == 0 || lastWasTimeout {
                    throw .deadlineExceeded(whileDoing: "calling Apple (\(endpoint), \(environment))")
                }
                throw .upstreamUnavailable(outage(lastProblem, schedule.attemptsMade, lastCode, lastRequestID))
            }
            try await reserveToken(now: now, schedule: schedule)

            let signer = MintReporter(signer: try client.signer(for: app), app: app.name, metrics: client.metrics.calls)
            let token: SignedJWT
            do {
                token = try client.jwtCache.token(for: identity, now: clock.wallNow(), signer: signer)
            } catch {
                throw .internalBug("signing the request JWT for app \(app.name) failed", requestID: nil)
            }
            let attemptStart = clock.monotonicNow()
            var timeout = client.settings.requestTimeout
            if let budget = schedule.attemptTimeout(now: attemptStart) { timeout = min(timeout, budget) }
            var headers = [("authorization", "Bearer \(token.token)"), ("accept", "application/json")]
            if body != nil { headers.append(("content-type", endpoint.requestContentType)) }
            // The caller's trace continues to Apple: same trace id, a child span per attempt (the recorded
            // span's own id when the call is traced).
            if let trace = TraceContext.current {
                headers += span.map { trace.outgoingHeaders(childSpan: $0.spanID) } ?? trace.outgoingHeaders()
            }
            let request = UpstreamRequest(
                method: endpoint.method, url: url, headers: headers, body: body, timeout: timeout)

            let outcome: AttemptOutcome
            var final: AppleFinalAnswer?
            do {
                let response = try await client.http.send(request)
                let parsedCode =
                    (200...299).contains(response.status)
                    ? nil : AppleErrorBody.parse(response.body, contentType: response.header("content-type"))?.code
                report(
                    httpStatus: response.status, errorCode: parsedCode, since: attemptStart,
                    requestID: response.appleRequestID)
                span?.set("http.response.status_code", response.status)
                if let parsedCode { span?.set("appstore.error_code", Int(parsedCode.rawValue)) }
                if (200...299).contains(response.status) {
                    client.logger.debug("Apple answered", metadata: metadata(response.appleRequestID, response.status))
                    return .answered(response)
                }
                let parsed = AppleErrorBody.parse(response.body, contentType: response.header("content-type"))
                let failure = AppleFailure(
                    httpStatus: response.status, code: parsed?.code, appleMessage: parsed?.message,
                    environment: environment, app: app.name, appleRequestID: response.appleRequestID)
                lastCode = parsed?.code
                lastRequestID = response.appleRequestID
                lastProblem = parsed.map { "\($0.code)" } ?? "HTTP \(response.status)"
                lastWasTimeout = false
                if response.status == 401 && !remintedAfter401 {
                    // The token may have been revoked or the clock stepped: one fresh JWT, then give up.
                    client.jwtCache.invalidate(identity, token: token.token)
                    remintedAfter401 = true
                    client.logger.notice(
                        "Apple refused the JWT; minting a new one", metadata: metadata(response.appleRequestID, 401))
                    continue
                }
                if response.status == 429 || parsed?.code.isRateLimited == true {
                    let retryAfter = response.header("retry-after").flatMap {
                        RetryAfter.parse($0, now: clock.wallNow())
                    }
                    let until = retryAfter ?? clock.wallNow() + GatewayError.defaultAppleRetryDelay
                    let delay = RetryAfter.delay(until: until, from: clock.wallNow())
                    await client.budget.block(key: key, for: delay, now: clock.monotonicNow())
                    client.logger.warning(
                        "Apple rate limit reached; endpoint blocked",
                        metadata: metadata(response.appleRequestID, response.status).merging(
                            ["blocked_until_ms": .stringConvertible(until.millisecondsSince1970)],
                            uniquingKeysWith: { $1 }))
                    return .refused(AppleFinalAnswer(failure: failure, retryAfter: until))
                }
                outcome = .appleError(httpStatus: response.status, code: parsed?.code)
                final = AppleFinalAnswer(failure: failure, retryAfter: nil)
            } catch {
                switch error.kind {
                case .cancelled: throw .cancelled
                case .invalidRequest:
                    throw .internalBug("the request to Apple could not be built: \(error.message)", requestID: nil)
                case .shutDown:
                    throw .upstreamUnavailable(
                        outage("the upstream client is shut down", schedule.attemptsMade + 1, nil, nil))
                case .timedOut, .connectionFailed, .responseTooLarge:
                    report(httpStatus: nil, errorCode: nil, since: attemptStart, requestID: nil)
                    lastProblem = error.message
                    lastCode = nil
                    lastRequestID = nil
                    lastWasTimeout = error.kind == .timedOut
                    span?.set("error.type", "\(error.kind)")
                    outcome = .connectionFailure(error.message)
                }
            }

            let recordedAt = clock.monotonicNow()
            switch schedule.record(outcome, now: recordedAt, random: &random, idempotent: endpoint.isIdempotent) {
            case .done:
                continue  // not reached: success returned above
            case .retry(let delay):
                client.metrics.calls.retry(
                    app: app.name, endpoint: endpoint.configName, environment: environment.rawValue)
                client.tracer.addEvent(
                    "retry", to: &span,
                    attributes: [
                        .init("appstore.problem", .string(lastProblem)),
                        .init("appstore.attempt", .int(Int64(schedule.attemptsMade))),
                        .init("appstore.delay_ms", .int(delay.millisecondsRoundedUp)),
                    ])
                span?.set("http.request.resend_count", schedule.attemptsMade)
                client.logger.info(
                    "retrying Apple call",
                    metadata: metadata(lastRequestID, nil).merging(
                        [
                            "problem": "\(lastProblem)", "attempt": .stringConvertible(schedule.attemptsMade),
                            "delay_ms": .stringConvertible(delay.millisecondsRoundedUp),
                        ], uniquingKeysWith: { $1 }))
                do { try await client.sleep(delay) } catch { throw .cancelled }
            case .giveUp(let reason):
                if reason == .notRetryable, let final { return .refused(final) }
                if reason == .deadlineTooClose, lastWasTimeout {
                    throw .deadlineExceeded(whileDoing: "waiting for Apple (\(endpoint), \(environment))")
                }
                client.logger.warning(
                    "Apple call failed",
                    metadata: metadata(lastRequestID, nil).merging(
                        [
                            "problem": "\(lastProblem)", "attempts": .stringConvertible(schedule.attemptsMade),
                            "reason": "\(reason)",
                        ],
                        uniquingKeysWith: { $1 }))
                throw .upstreamUnavailable(outage(lastProblem, schedule.attemptsMade, lastCode, lastRequestID))
            }
        }
    }

    /// Counts one attempt and notes Apple's request id for the RPC's log line.
    private func report(httpStatus: Int?, errorCode: AppleErrorCode?, since start: MonotonicInstant, requestID: String?)
    {
        let elapsed = client.clock.monotonicNow() - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        client.metrics.calls.attempt(
            app: app.name, endpoint: endpoint.configName, environment: environment.rawValue, httpStatus: httpStatus,
            errorCode: errorCode.map { Int($0.rawValue) }, seconds: seconds)
        if let annotations = CallAnnotations.current {
            annotations.note("app", app.name)
            annotations.note("environment", environment.rawValue)
            if let requestID { annotations.note("apple_request_id", requestID) }
        }
    }

    /// Takes a token from the bucket, sleeping for a reserved slot when the wait fits
    /// `rateLimits.maxWait` and the deadline; else RESOURCE_EXHAUSTED.
    private func reserveToken(now: MonotonicInstant, schedule: RetrySchedule) async throws(GatewayError) {
        var maxWait = client.settings.maxRateLimitWait
        if let latest = schedule.latestAttemptStart { maxWait = min(maxWait, latest - now) }
        switch await client.budget.reserve(key: key, now: now, maxWait: maxWait) {
        case .goNow:
            return
        case .goAfter(let wait):
            client.metrics.rateLimits.waited(
                app: app.name, endpoint: endpoint.configName, environment: environment.rawValue,
                seconds: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
            do { try await client.sleep(wait) } catch { throw .cancelled }
        case .refused(let retryAfter):
            client.metrics.rateLimits.refused(
                app: app.name, endpoint: endpoint.configName, environment: environment.rawValue)
            throw .rateLimited(RateLimitRefusal(key: key, retryAfter: retryAfter, app: app.name))
        }
    }

    private func outage(_ problem: String, _ attempts: Int, _ code: AppleErrorCode?, _ requestID: String?)
        -> UpstreamOutage
    {
        UpstreamOutage(
            lastProblem: problem, attempts: attempts, app: app.name, environment: environment, lastAppleCode: code,
            appleRequestID: requestID)
    }

    private func metadata(_ requestID: String?, _ status: Int?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "app": "\(app.name)", "endpoint": "\(endpoint)", "environment": "\(environment)",
            "apple_request_id": "\(requestID ?? "-")",
        ]
        if let status { metadata["http_status"] = "\(status)" }
        return metadata
    }
}

/// Counts the JWTs actually signed: the cache calls its signer only when it mints.
private struct MintReporter: ES256Signer {
    let signer: any ES256Signer
    let app: String
    let metrics: AppleCallMetrics

    func sign(_ message: [UInt8]) throws -> [UInt8] {
        metrics.jwtMinted(app: app)
        return try signer.sign(message)
    }
}
