import AppStoreClient
import AppStoreDomain
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import Logging
import Metrics
import ProtoCodec
import SignedData

/// StreamNotifications: Apple's Get Notification History as a resumable, backpressured server stream.
///
/// - `prepare` checks everything it can before the response head (Trailers-Only errors): app, dates,
///   Apple's retention window, filter rules, the resume token's MAC and that it belongs to these filters.
/// - `run` pages Apple with the same body on every page and the previous `paginationToken` in the query,
///   each page through the app's getNotificationHistory token bucket. At most one page is fetched ahead of
///   what the client has read: `send` waits while the client is behind, so a slow reader holds paging back.
/// - Every event is verified (chain, app, answering environment) and decoded, with a resume token naming
///   it (`ResumeTokenCodec`). A notification that fails verification cannot block the stream: it is
///   delivered with its `signed_payload`, `status` and `message` and no decoded `notification` (counted as a
///   verification verdict and logged), and the stream goes on; `strict_verification` ends the stream with
///   DATA_LOSS at it instead. A revocation status that online checks cannot get ends the stream UNAVAILABLE
///   with the resume token of the event before, so a later call retries it. Cancellation and deadlines
///   cancel the page in flight (its curl transfer).
/// - An upstream failure mid-stream ends the call with its mapped status plus `resume_token` in the
///   ErrorInfo metadata; so does a server shutdown (UNAVAILABLE), through the gRPC layer's shutdown hook.
package struct StreamNotificationsHandler: Sendable {
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let tokens: ResumeTokenCodec
    let clock: any GatewayClock
    let logger = Logger(label: "appstore-gateway.notifications")
    /// Followed streams' tokens (same key ring, their own version).
    let followTokens: FollowTokenCodec
    /// The webhook's store, for `follow` (nil: no webhook configured, `follow` is INVALID_ARGUMENT).
    var live: LiveNotificationFeed?
    /// Where the verdicts of the notifications delivered unverified count (as `stream_<verdict>`).
    var verifications = VerificationMetrics(registry: MetricsRegistry())
    /// Stored notifications `verifier` verified lately, shared by every follower.
    let verifiedStored = VerifiedNotificationCache()

    /// A handler calling Apple through `client`, verifying with `verifier`, authenticating resume tokens
    /// with `resumeTokenKeys` and refusing those issued longer than `resumeTokenMaxAge` ago.
    package init(
        client: AppStoreAPIClient, verifier: SignedDataVerifier, resumeTokenKeys: ResumeTokenKeyRing,
        resumeTokenMaxAge: Duration, clock: any GatewayClock
    ) {
        self.client = client
        self.verifier = verifier
        self.tokens = ResumeTokenCodec(ring: resumeTokenKeys, maxAge: resumeTokenMaxAge)
        self.followTokens = FollowTokenCodec(ring: resumeTokenKeys, maxAge: resumeTokenMaxAge)
        self.clock = clock
    }

    /// A checked request: what `run` needs.
    package struct Plan: Sendable {
        let app: App
        let body: NotificationHistoryRequestBody
        let environment: AppleEnvironment?
        let fingerprint: [UInt8]
        let resume: NotificationResumeToken?
        let resumeText: String?
        /// `strict_verification`: end at the first notification that fails verification.
        var strictVerification = false
        /// The environment the pages are asked of (nil: the app's `auto` policy, production then sandbox on
        /// 4040010). `environment`, else for an `auto` app production alone when no sandbox fallback can help:
        /// without a transaction id (Apple answers production's history, never 4040010) or with a start date
        /// outside sandbox's 30-day window (sandbox would refuse it).
        var pagingEnvironment: AppleEnvironment?
    }

    /// A checked StreamNotifications call: a window of Apple's history, or a followed stream (`follow`).
    package enum Call: Sendable {
        case history(Plan)
        case follow(FollowPlan)
    }

    /// Validates `request` as the call it asks for (before any response header is sent).
    package func prepare(call request: StreamNotificationsRequest) throws(GatewayError) -> Call {
        request.follow ? .follow(try prepareFollow(request)) : .history(try prepare(request))
    }

    /// Streams `call` through `send` (see `run(_:remaining:send:)` and `runFollow`). Throws the call's final
    /// status.
    package func run(
        _ call: Call, remaining: Duration?,
        send: @escaping @Sendable (NotificationEvent, _ shutdownStatus: RPCStatus) async throws(RPCStatus) -> Void
    ) async throws(RPCStatus) {
        switch call {
        case .history(let plan): try await run(plan, remaining: remaining, send: send)
        case .follow(let follow): try await runFollow(follow, remaining: remaining, send: send)
        }
    }

    /// Validates `request` (before any response header is sent).
    package func prepare(_ request: StreamNotificationsRequest) throws(GatewayError) -> Plan {
        try request.checkContract()
        let app = try client.apps.app(named: request.app)
        let environment = try request.environment.requested()
        guard let start = request.startDate else {
            throw .invalidArgument(field: "start_date", problem: "is required")
        }
        guard let end = request.endDate else { throw .invalidArgument(field: "end_date", problem: "is required") }
        for (field, timestamp) in [("start_date", start), ("end_date", end)] {
            guard timestamp.nanos >= 0, timestamp.nanos < 1_000_000_000, timestamp.seconds >= 0,
                timestamp.seconds <= 253_402_300_799
            else { throw .invalidArgument(field: field, problem: "must be a valid date between 1970 and 9999") }
        }
        let body = NotificationHistoryRequestBody(
            startDate: start.unixMilliseconds, endDate: end.unixMilliseconds,
            notificationType: request.notificationType, notificationSubtype: request.notificationSubtype,
            transactionId: request.transactionId, onlyFailures: request.onlyFailures)
        let retentionEnvironment = environment ?? (app.environment == .sandbox ? .sandbox : .production)
        do {
            try body.validate(now: clock.wallNow(), environment: retentionEnvironment)
        } catch {
            throw Self.protoFieldNames(error)
        }
        if app.appAppleId == nil, retentionEnvironment == .production {
            throw .invalidArgument(
                field: "app", problem: "production notifications are bound to the app's Apple id: set apps[].appAppleId"
            )
        }
        let fingerprint = Self.fingerprint(
            body: body, bundleID: app.bundleId, environment: environment, caller: CallerIdentity.current?.identity)
        var resume: NotificationResumeToken?
        if !request.resumeToken.isEmpty {
            let token = try tokens.decode(request.resumeToken, now: clock.wallNow())
            guard token.bundleID == app.bundleId, token.filterHash == fingerprint else {
                throw .invalidArgument(
                    field: "resume_token",
                    problem:
                        "was issued for a stream with other filters, or to another caller; resend exactly the app, "
                        + "dates, notification_type, notification_subtype, transaction_id, only_failures and environment "
                        + "of the stream it came from, as the caller that received it")
            }
            resume = token
        }
        var pagingEnvironment = environment
        if environment == nil, app.environment == .auto {
            let sandboxWindowStart =
                clock.wallNow().millisecondsSince1970
                - NotificationHistoryRequestBody.retention(in: .sandbox).wholeMilliseconds
            if request.transactionId.isEmpty || body.startDate < sandboxWindowStart { pagingEnvironment = .production }
        }
        return Plan(
            app: app, body: body, environment: environment, fingerprint: fingerprint, resume: resume,
            resumeText: request.resumeToken.isEmpty ? nil : request.resumeToken,
            strictVerification: request.strictVerification, pagingEnvironment: pagingEnvironment)
    }

    /// Streams the notifications of `plan` through `send`, whose second argument is the status a server
    /// shutdown should end the call with once that event is queued. Throws the call's final status.
    package func run(
        _ plan: Plan, remaining: Duration?,
        send: @escaping @Sendable (NotificationEvent, _ shutdownStatus: RPCStatus) async throws(RPCStatus) -> Void
    ) async throws(RPCStatus) {
        let deadline = remaining.map { clock.monotonicNow() + $0 }
        var paging = NotificationPaging(
            resumingAt: plan.resume.map { (pageToken: $0.pageToken, index: $0.index, environment: $0.environment) })
        var lastToken = plan.resumeText
        var lastSignedDate = plan.resume?.eventSignedDate
        var failure: GatewayError?
        var ended: RPCStatus?
        let app = plan.app

        typealias Fetched = (
            request: NotificationPaging.PageRequest, page: Result<NotificationHistoryPage, GatewayError>
        )
        @Sendable func fetch(_ request: NotificationPaging.PageRequest) async -> Fetched {
            do throws(GatewayError) {
                let page = try await self.page(request, of: plan, deadline: deadline)
                return (request, .success(page))
            } catch {
                return (request, .failure(error))
            }
        }

        await withTaskGroup(of: Fetched.self) { group in
            guard let first = paging.next else { return }
            group.addTask { await fetch(first) }
            // One child at a time: the page being emitted has at most its successor in flight.
            while let fetched = await group.next() {
                let page: NotificationHistoryPage
                switch fetched.page {
                case .success(let value): page = value
                case .failure(let error):
                    failure = error
                    return
                }
                let emissions = paging.receive(page.pagingSummary, for: fetched.request)
                if let next = paging.next, !Task.isCancelled { group.addTask { await fetch(next) } }
                for emission in emissions {
                    let item = page.items[emission.index]
                    do throws(GatewayError) {
                        var event = try await event(for: item, page: page, plan: plan)
                        let signedDate = event.notification?.signedDate?.unixMilliseconds ?? 0
                        let token = tokens.encode(
                            NotificationResumeToken(
                                pageToken: emission.pageToken, index: emission.index, environment: emission.environment,
                                bundleID: app.bundleId, filterHash: plan.fingerprint, eventSignedDate: signedDate,
                                issuedAt: clock.wallNow().millisecondsSince1970))
                        event.resumeToken = token
                        let shutdown = GatewayError.serverShuttingDown.rpcStatus.addingInfoMetadata(
                            "resume_token", token, domain: gatewayErrorDomain)
                        do throws(RPCStatus) {
                            try await send(event, shutdown)
                        } catch {
                            ended = error
                            group.cancelAll()
                            return
                        }
                        lastToken = token
                        lastSignedDate = signedDate
                    } catch {
                        failure = error
                        group.cancelAll()
                        return
                    }
                }
                if paging.ending == .missingToken {
                    failure = .appleDataRejected(
                        app: app.name, environment: page.environment,
                        problem: "a notification history page (apple request id \(page.appleRequestID ?? "none")) "
                            + "has hasMore true but no paginationToken")
                    return
                }
            }
        }
        if let ended { throw ended }
        guard var failure else { return }
        if case .appleAPI(let apple) = failure, apple.code == .paginationTokenExpired {
            failure = .resumeCursorExpired(app: app.name, environment: apple.environment, restartFrom: lastSignedDate)
        }
        if Task.isCancelled, case .cancelled = failure { throw failure.rpcStatus }
        var status = failure.rpcStatus
        if let lastToken { status = status.addingInfoMetadata("resume_token", lastToken, domain: gatewayErrorDomain) }
        throw status
    }

    /// The page of `plan`'s history that `request` asks for, in the environment it names or else the plan's.
    func page(
        _ request: NotificationPaging.PageRequest, of plan: Plan, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> NotificationHistoryPage {
        try await client.notificationHistory(
            body: plan.body, paginationToken: request.paginationToken, app: plan.app,
            environment: request.environment ?? plan.pagingEnvironment, deadline: deadline)
    }

    func event(
        for item: NotificationHistoryPage.Item, page: NotificationHistoryPage, plan: Plan
    ) async throws(GatewayError) -> NotificationEvent {
        let environment = AppStoreEnvironment(page.environment)
        let requirements: VerificationRequirements
        do {
            requirements = try VerificationRequirements(
                bundleID: plan.app.bundleId, appAppleID: plan.app.appAppleId, environment: environment)
        } catch {
            throw .invalidArgument(field: "app", problem: "\(error.description) (set apps[].appAppleId)")
        }
        // On the loop when the caches know it; else off it (chain validation, ECDSA, OCSP fetches awaited).
        let result = await verifier.verifyOffLoopUnlessCached(
            item.signedPayload, kind: .notification, requirements: requirements)
        var event = NotificationEvent()
        event.signedPayload = item.signedPayload
        event.status = result.status.protoStatus
        if result.isVerified, case .notification(let notification)? = PayloadDecoder.decode(result) {
            event.notification = notification
        } else {
            let problem =
                "a signed notification of the page (apple request id \(page.appleRequestID ?? "none")) is "
                + "\(result.status.rawValue): \(result.message)"
            if result.status == .retryableFailure {
                throw .revocationStatusUnavailable(app: plan.app.name, problem: problem)
            }
            if plan.strictVerification {
                throw .appleDataRejected(app: plan.app.name, environment: page.environment, problem: problem)
            }
            // Delivered undecoded, so one bad notification never blocks the stream (nor a resumed one).
            event.status = result.status == .ok ? VerificationStatus.malformed : result.status.protoStatus
            event.message = result.isVerified ? "the verified payload could not be decoded" : result.message
            verifications.verification(verdict: "stream_" + result.status.rawValue)
            logger.warning(
                "delivering a notification that failed verification",
                metadata: [
                    "app": "\(plan.app.name)", "environment": "\(page.environment)",
                    "verdict": "\(result.status)", "apple_request_id": "\(page.appleRequestID ?? "-")",
                ])
        }
        event.sendAttempts = item.sendAttempts.map { attempt in
            var typed = SendAttempt()
            typed.attemptDate = attempt.attemptDate == 0 ? nil : ProtoTimestamp(unixMilliseconds: attempt.attemptDate)
            typed.result = Self.sendAttemptResults[attempt.result] ?? .unspecified
            typed.resultRaw = attempt.result
            return typed
        }
        return event
    }

    /// Apple's sendAttemptResult strings (Apple's App Store Server API documentation).
    static let sendAttemptResults: [String: SendAttemptResult] = [
        "SUCCESS": .success, "TIMED_OUT": .timedOut, "TLS_ISSUE": .tlsIssue, "CIRCULAR_REDIRECT": .circularRedirect,
        "NO_RESPONSE": .noResponse, "SOCKET_ISSUE": .socketIssue, "UNSUPPORTED_CHARSET": .unsupportedCharset,
        "INVALID_RESPONSE": .invalidResponse, "PREMATURE_CLOSE": .prematureClose,
        "UNSUCCESSFUL_HTTP_RESPONSE_CODE": .unsuccessfulHttpResponseCode, "OTHER": .other,
    ]

    /// SHA-256 of the filters that define a stream and of the caller it was served to: a resume token only
    /// continues the stream it came from, for the caller that received it (anonymous callers share one).
    static func fingerprint(
        body: NotificationHistoryRequestBody, bundleID: String, environment: AppleEnvironment?, caller: String? = nil
    ) -> [UInt8] {
        var parts = ["v1", bundleID, environment?.rawValue ?? "", body.json]
        if let caller { parts.append("caller:" + caller) }
        return SHA256.hash(Array(parts.joined(separator: "\n").utf8))
    }

    /// The body's validation names Apple's JSON fields; callers wrote the proto's.
    private static func protoFieldNames(_ error: GatewayError) -> GatewayError {
        guard case .invalidArgument(let field, let problem) = error else { return error }
        let names = [
            "startDate": "start_date", "endDate": "end_date", "notificationType": "notification_type",
            "notificationSubtype": "notification_subtype", "transactionId": "transaction_id",
        ]
        var text = problem
        for (apple, proto) in names { text = text.replacingOccurrences(of: apple, with: proto) }
        return .invalidArgument(field: names[field] ?? field, problem: text)
    }
}

extension NotificationHistoryPage {
    /// What paging needs of this page.
    var pagingSummary: NotificationPaging.PageSummary {
        .init(count: items.count, paginationToken: paginationToken, hasMore: hasMore, environment: environment)
    }
}
