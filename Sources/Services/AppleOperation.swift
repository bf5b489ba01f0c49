import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import Metrics
import ProtoCodec
import SignedData
import SubscriptionState

/// An RPC backed by one App Store Server API endpoint, described by what differs between endpoints: the `app`
/// field, the checked request to Apple, and how Apple's answer becomes the typed response. Everything else
/// (rate limits, JWT, retries, environment fallback, coalescing of reads, deadlines, error mapping) is the one
/// call path of `AppleOperationHandler` and `AppStoreAPIClient`.
struct AppleOperation<Request: ProtoMessage, Response: ProtoMessage>: Sendable {
    /// For endpoints that page with Apple's `revision`: the next page's request (nil: stop) and how pages merge.
    struct Paging: Sendable {
        /// The request for the page after `page`, or nil when the caller did not ask for more or there is none.
        var next: @Sendable (_ request: Request, _ page: Response, _ sent: AppleRequest) -> AppleRequest?
        /// Adds `page` to the response so far.
        var merge: @Sendable (_ response: inout Response, _ page: Response) -> Void
    }

    /// The request's `app` field.
    var app: @Sendable (Request) -> String
    /// The request checked against the contract and mapped to Apple's request; a bad field is INVALID_ARGUMENT.
    var plan: @Sendable (Request) throws(GatewayError) -> AppleRequest
    /// Apple's answer decoded, every JWS verified (`AppleAnswer`).
    var answer: @Sendable (AppleAnswer) throws(GatewayError) -> Response
    /// Paging, for paged endpoints.
    var paging: Paging? = nil
}

/// Apple's 2xx answer to one call with what decoding it needs: the app, the verifier and the answering environment.
struct AppleAnswer {
    /// Apple's answer.
    let response: AppleResponse
    /// The request it answers.
    let request: AppleRequest
    /// The app the call was for.
    let app: App
    let verifier: SignedDataVerifier
    /// Where the transactions and renewal infos verified while decoding are noted for the subscription state
    /// (nil: the gateway keeps none, so nothing is noted).
    let notes: VerifiedSnapshotNotes?
    /// With online checks: the revocation statuses a verification found missing (fetched by the handler,
    /// which then decodes the answer again).
    let missingStatuses = MissingRevocationStatuses()

    /// The environment that answered, as the proto names it.
    var environment: Environment { response.environment.protoEnvironment }

    /// A date Apple sent as UNIX milliseconds, nil when absent or outside 1970–9999 (not a valid Timestamp).
    func date(_ milliseconds: Int64?) -> ProtoTimestamp? {
        guard let milliseconds, AppleDateRange.milliseconds.contains(milliseconds) else { return nil }
        return ProtoTimestamp(unixMilliseconds: milliseconds)
    }

    /// The body decoded as `Wire` (DATA_LOSS when it is not Apple's JSON).
    func decoded<Wire: AppleJSONShape>(_ type: Wire.Type, what: String) throws(GatewayError) -> Wire {
        try response.decoded(type, what: what, app: app.name)
    }

    /// A transaction JWS, verified (chain, app, answering environment) and decoded.
    func transaction(_ jws: String, what: String) throws(GatewayError) -> Transaction {
        guard case .transaction(let value) = try verified(jws, kind: .transaction, what: what) else {
            throw rejected(what, "not a transaction")
        }
        notes?.add(SignedTransaction(jws: jws, payload: value))
        return value
    }

    /// A renewal info JWS, verified and decoded.
    func renewalInfo(_ jws: String, what: String) throws(GatewayError) -> RenewalInfo {
        guard case .renewalInfo(let value) = try verified(jws, kind: .renewalInfo, what: what) else {
            throw rejected(what, "not a renewal info")
        }
        notes?.add(SignedRenewalInfo(jws: jws, payload: value))
        return value
    }

    /// An app transaction JWS, verified and decoded.
    func appTransaction(_ jws: String, what: String) throws(GatewayError) -> AppTransaction {
        guard case .appTransaction(let value) = try verified(jws, kind: .appTransaction, what: what) else {
            throw rejected(what, "not an app transaction")
        }
        return value
    }

    /// A notification JWS, verified and decoded.
    func notification(_ jws: String, what: String) throws(GatewayError) -> AppStoreNotification {
        guard case .notification(let value) = try verified(jws, kind: .notification, what: what) else {
            throw rejected(what, "not a notification")
        }
        return value
    }

    private func verified(_ jws: String, kind: SignedDataKind, what: String) throws(GatewayError) -> DecodedPayload {
        let requirements: VerificationRequirements
        do {
            requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId,
                environment: AppStoreEnvironment(response.environment))
        } catch {
            throw .invalidArgument(field: "environment", problem: "\(error.description) (set apps[].appAppleId)")
        }
        let result: VerificationResult
        switch verifier.verifyStep(jws, kind: kind, requirements: requirements) {
        case .done(let done):
            result = done
        case .needsRevocationStatus(let queries):
            missingStatuses.add(queries)
            throw .revocationStatusUnavailable(app: app.name, problem: "\(what): its OCSP status is not known yet")
        }
        if result.status == .retryableFailure {
            throw .revocationStatusUnavailable(app: app.name, problem: "\(what): \(result.message)")
        }
        guard result.isVerified, let payload = PayloadDecoder.decode(result) else {
            throw rejected(what, "\(result.status.rawValue): \(result.message)")
        }
        return payload
    }

    private func rejected(_ what: String, _ problem: String) -> GatewayError {
        .appleDataRejected(
            app: app.name, environment: response.environment,
            problem: "\(what) (apple request id \(response.appleRequestID ?? "none")) is \(problem)")
    }
}

/// Runs an `AppleOperation`: checks the request, resolves the app, calls Apple through the shared client (reads
/// coalesced with identical calls in flight, as GetHistory), follows pages when the operation pages, and decodes.
struct AppleOperationHandler<Request: ProtoMessage, Response: ProtoMessage>: Sendable {
    let operation: AppleOperation<Request, Response>
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let clock: any GatewayClock
    /// Most pages one paged call fetches (`history.maxPages`).
    let maxPages: Int
    /// Most bytes of a paged answer (`history.maxResponseBytes`): a page that would pass it is left out, and the
    /// answer's `has_more` and `revision` continue before it.
    let maxResponseBytes: Int
    private let flights = SingleFlight<[UInt8], Response>()
    /// Where the reads that joined an identical one in flight count.
    let coalescing: CoalescingMetrics
    /// Where the transactions and renewal infos of a successful answer go: the subscription state, as an Apple
    /// read (nil: the gateway keeps no state, or this handler is the state's own reader).
    let feed: AppleReadFeed?

    init(
        _ operation: AppleOperation<Request, Response>, client: AppStoreAPIClient, verifier: SignedDataVerifier,
        clock: any GatewayClock, maxPages: Int, maxResponseBytes: Int = 4_000_000,
        coalescing: CoalescingMetrics = CoalescingMetrics(registry: MetricsRegistry()), feed: AppleReadFeed? = nil
    ) {
        self.coalescing = coalescing
        self.feed = feed
        self.operation = operation
        self.client = client
        self.verifier = verifier
        self.clock = clock
        self.maxPages = max(1, maxPages)
        self.maxResponseBytes = max(1024, maxResponseBytes)
    }

    /// Answers `request`; `remaining` is the time left before the caller's deadline (nil: none).
    func handle(_ request: Request, remaining: Duration?) async throws(GatewayError) -> Response {
        var contract = RequestContract()
        contract.length(operation.app(request), field: "app", max: RequestContract.maxAppBytes)
        try contract.check()
        let plan = try operation.plan(request)
        let app = try client.apps.app(named: operation.app(request))
        let deadline = remaining.map { clock.monotonicNow() + $0 }
        guard plan.endpoint.isRead else { return try await fetch(request, plan: plan, app: app, deadline: deadline) }
        // Identical reads share one upstream call, each caller keeping its own deadline (as GetHistory).
        return try await flights.runWithinDeadline(
            key: request.serializedBytes(),
            joined: { coalescing.joined(app: app.name, endpoint: plan.endpoint.configName) },
            hasTime: { hasTimeForAnotherCall(deadline) }
        ) { [self] () async throws(GatewayError) in
            try await fetch(request, plan: plan, app: app, deadline: deadline)
        }
    }

    /// Apple's answer, every page the caller asked for that fits; once it is complete, what it verified goes to
    /// the subscription state (`feed`), only the pages in the answer, and only from this call (callers that joined
    /// it share the answer, not another apply).
    private func fetch(
        _ request: Request, plan: AppleRequest, app: App, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> Response {
        var sent = plan
        var answered = try await client.send(sent, app: app, deadline: deadline)
        var (response, verified) = try await decode(answered, request: sent, app: app)
        guard let paging = operation.paging else {
            feed?.observe(verified, app: app)
            return response
        }
        var pages = 1
        var page = response
        while pages < maxPages, hasTimeForAnotherCall(deadline), var next = paging.next(request, page, sent) {
            // Later pages stay in the environment that answered the first.
            next.environment = answered.environment
            sent = next
            answered = try await client.send(sent, app: app, deadline: deadline)
            let pageVerified: VerifiedSnapshots
            (page, pageVerified) = try await decode(answered, request: sent, app: app)
            guard response.serializedSize() + page.serializedSize() <= maxResponseBytes else { break }
            paging.merge(&response, page)
            verified.append(pageVerified)
            pages += 1
        }
        // A page that failed threw above: an answer that did not verify in full hands over nothing.
        feed?.observe(verified, app: app)
        return response
    }

    /// Apple's answer decoded and verified. With online checks, revocation statuses not cached yet are fetched
    /// (awaited in this task, never on an event loop) and the answer decoded again; a responder that cannot be
    /// reached is UNAVAILABLE with RetryInfo, as for GetHistory.
    ///
    /// With a `feed`, also the transactions and renewal infos this decoding verified (the last pass's only: a
    /// pass that stopped for missing revocation statuses hands over nothing).
    private func decode(
        _ answered: AppleResponse, request sent: AppleRequest, app: App
    ) async throws(GatewayError) -> (Response, VerifiedSnapshots) {
        // Apple's answer may carry many JWS (every subscription's renewal info and transaction): verified off the
        // call's loop, in one hop each way.
        let noting = feed != nil
        let decoded = await offLoop {
            await verifier.fetchingRevocationStatuses {
                () async -> RevocationPass<Result<(Response, VerifiedSnapshots), GatewayError>> in
                let notes = noting ? VerifiedSnapshotNotes() : nil
                let answer = AppleAnswer(response: answered, request: sent, app: app, verifier: verifier, notes: notes)
                do throws(GatewayError) {
                    let response = try operation.answer(answer)
                    return .done(.success((response, notes?.taken ?? VerifiedSnapshots())))
                } catch {
                    let queries = answer.missingStatuses.taken
                    return queries.isEmpty ? .done(.failure(error)) : .needs(queries)
                }
            }
        }
        switch decoded {
        case .success(let response):
            return try response.get()
        case .failure(let failure) where failure.result.status == .retryableFailure:
            throw .revocationStatusUnavailable(app: app.name, problem: failure.result.message)
        case .failure(let failure):
            let result = failure.result
            throw .appleDataRejected(
                app: app.name, environment: answered.environment,
                problem: "signed data in Apple's answer is \(result.status.rawValue): \(result.message)")
        }
    }

    private func hasTimeForAnotherCall(_ deadline: MonotonicInstant?) -> Bool {
        guard let deadline else { return true }
        let policy = client.settings.retryPolicy
        return clock.monotonicNow() + policy.minimumAttemptTime + policy.deadlineMargin <= deadline
    }
}

extension Environment {
    /// The environment a request asks for: nil for UNSPECIFIED (as the app is configured); Xcode, LocalTesting and
    /// unknown values are INVALID_ARGUMENT on `field`.
    func requested(field: String = "environment") throws(GatewayError) -> AppleEnvironment? {
        switch self {
        case .unspecified: return nil
        case .production: return .production
        case .sandbox: return .sandbox
        case .xcode, .localTesting:
            throw .invalidArgument(
                field: field, problem: "Xcode and LocalTesting data are signed locally; Apple has no server for them")
        case .unrecognized(let value): throw .invalidArgument(field: field, problem: "unknown Environment \(value)")
        }
    }
}

/// The revocation statuses the verifications of one answer found missing.
final class MissingRevocationStatuses: Sendable {
    private let queries = Lock<[RevocationQuery]>([])

    func add(_ missing: [RevocationQuery]) { queries.withLock { $0 += missing } }

    /// The statuses collected so far, emptied.
    var taken: [RevocationQuery] {
        queries.withLock { queries in
            defer { queries = [] }; return queries
        }
    }
}
