import AppStoreClient
import GatewayCore
import ProtoCodec
import SignedData

/// GetHistory: Apple's Get Transaction History (V2) behind gRPC, with every JWS verified and decoded.
///
/// - Filters map to Apple's query (`GetHistoryRequest.callPlan`); bad values are INVALID_ARGUMENT.
/// - `signed_transactions` always carries the JWS strings; `transactions` the same entries verified
///   (chain to a configured root, app and answering environment bound) and decoded. One transaction
///   failing verification fails the call with DATA_LOSS (`appleDataRejected`): returning the rest would
///   hide that something between the gateway and Apple is forging or corrupting data.
/// - `all_pages` follows `revision` while `hasMore`, pinned to the environment that answered the first
///   page, and stops on an unchanged revision, at `history.maxPages`, or when too little of the deadline
///   is left for another page, or before the response would grow past `history.maxResponseBytes` (then
///   `has_more` stays true and `revision` continues after the last page returned). A page that would not
///   fit is left out, not cut: the caller fetches it again with the returned `revision`. Only a first page
///   alone may exceed the cap (an Apple page holds at most 20 transactions, far below 4 MiB).
///   Entries are deduplicated by `transactionId`, keeping the newest `signedDate` at the position the
///   transaction first appeared.
/// - Identical requests in flight share one upstream call (`SingleFlight`), each caller keeping its own
///   deadline and cancellation.
public struct GetHistoryHandler: Sendable {
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let maxPages: Int
    let maxResponseBytes: Int
    let clock: any GatewayClock
    let flights = SingleFlight<[UInt8], GetHistoryResponse>()
    /// The environment behind each revision handed out, so paging on asks it directly (`auto` apps).
    let revisions = RevisionEnvironments()

    /// A handler calling Apple through `client`, verifying with `verifier`, paging at most `maxPages` and
    /// (with `all_pages`) at most about `maxResponseBytes` of response.
    public init(
        client: AppStoreAPIClient, verifier: SignedDataVerifier, maxPages: Int, maxResponseBytes: Int = 4_000_000,
        clock: any GatewayClock
    ) {
        self.client = client
        self.verifier = verifier
        self.maxPages = max(1, maxPages)
        self.maxResponseBytes = max(1024, maxResponseBytes)
        self.clock = clock
    }

    /// Upstream calls currently shared by callers (for tests and metrics).
    public var callsInFlight: Int { flights.inFlight }

    /// Answers `request`; `remaining` is the time left before the caller's deadline (nil: none).
    public func handle(_ request: GetHistoryRequest, remaining: Duration?) async throws(GatewayError)
        -> GetHistoryResponse
    {
        try request.checkContract()
        let app = try client.apps.app(named: request.app)
        var checked = try request.callPlan()
        if checked.environment == nil, app.environment == .auto, let revision = checked.query.revision,
            let known = revisions.environment(bundleID: app.bundleId, revision: revision)
        {
            // Later pages go to the environment that answered the earlier ones, without the caller echoing it.
            checked.environment = known
        }
        let plan = checked
        let deadline = remaining.map { clock.monotonicNow() + $0 }
        return try await flights.runWithinDeadline(
            key: request.serializedBytes(),
            joined: { client.events.callCoalesced(app: app.name, endpoint: "getTransactionHistory") },
            hasTime: { hasTimeForAnotherPage(deadline) }
        ) { [self] () async throws(GatewayError) in
            try await fetch(request, plan: plan, app: app, deadline: deadline)
        }
    }

    private func fetch(
        _ request: GetHistoryRequest, plan: HistoryCallPlan, app: GatewayConfiguration.App, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> GetHistoryResponse {
        var query = plan.query
        var environment = plan.environment
        var collected = TransactionCollection()
        var response = GetHistoryResponse()
        var pages: Int32 = 0
        // Estimated response bytes so far, and the largest page seen (the guess for the next one).
        var responseBytes = 0
        var largestPage = 0
        while true {
            let page = try await client.transactionHistory(
                transactionID: plan.transactionID, query: query, app: app, environment: environment, deadline: deadline)
            environment = page.environment
            var withPage = collected
            var pageBytes = 0
            for (index, jws) in page.signedTransactions.enumerated() {
                let transaction = try await verify(jws, index: index, page: page, app: app)
                pageBytes += Self.estimatedBytes(jws: jws, transaction, legacy: request.includeLatestReceiptInfo)
                withPage.add(jws: jws, transaction: transaction)
            }
            if pages > 0, responseBytes + pageBytes > maxResponseBytes {
                // Left out whole: the caller continues from the revision that fetched it.
                response.hasMore = true
                response.revision = query.revision ?? ""
                break
            }
            pages += 1
            collected = withPage
            responseBytes += pageBytes
            largestPage = max(largestPage, pageBytes)
            // Apple's answer, not the configuration: what Apple says it is (its `environment` field, else the
            // environment that answered).
            response.appAppleId = page.appAppleId
            response.bundleId = page.bundleId
            switch page.environmentName {
            case "Production": response.environment = .production
            case "Sandbox": response.environment = .sandbox
            default: response.environment = page.environment == .production ? .production : .sandbox
            }
            response.hasMore = page.hasMore
            response.revision = page.revision
            guard request.allPages, page.hasMore, !page.revision.isEmpty, page.revision != query.revision,
                pages < maxPages, responseBytes + largestPage <= maxResponseBytes, hasTimeForAnotherPage(deadline)
            else { break }
            query = query.nextPage(revision: page.revision)
        }
        response.pagesFetched = pages
        if let environment { revisions.remember(environment, bundleID: app.bundleId, revision: response.revision) }
        response.signedTransactions = collected.entries.map(\.jws)
        response.transactions = collected.entries.map(\.transaction)
        if request.includeLatestReceiptInfo {
            response.latestReceiptInfo = response.transactions.map(LegacyReceiptInfo.init(transaction:))
        }
        return response
    }

    /// What one entry adds to the response: the JWS, its decoding, the legacy form when asked, and the
    /// field tags and lengths around them.
    static func estimatedBytes(jws: String, _ transaction: Transaction, legacy: Bool) -> Int {
        var bytes = jws.utf8.count + transaction.serializedSize() + 16
        if legacy { bytes += LegacyReceiptInfo(transaction: transaction).serializedSize() + 8 }
        return bytes
    }

    private func hasTimeForAnotherPage(_ deadline: MonotonicInstant?) -> Bool {
        guard let deadline else { return true }
        let policy = client.settings.retryPolicy
        return clock.monotonicNow() + policy.minimumAttemptTime + policy.deadlineMargin <= deadline
    }

    private func verify(
        _ jws: String, index: Int, page: TransactionHistoryPage, app: GatewayConfiguration.App
    ) async throws(GatewayError) -> Transaction {
        let environment: AppStoreEnvironment = page.environment == .production ? .production : .sandbox
        let requirements: VerificationRequirements
        do {
            requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId, environment: environment)
        } catch {
            throw .invalidArgument(field: "environment", problem: "\(error.description) (set apps[].appAppleId)")
        }
        // Runs the chain validation in this task, and awaits any OCSP fetch (online checks).
        let result =
            await verifier.verifyOnline(jws, kind: .transaction, requirements: requirements)
        if result.status == .retryableFailure {
            throw .revocationStatusUnavailable(app: app.name, problem: "signed transaction \(index): \(result.message)")
        }
        guard result.isVerified, case .transaction(let transaction)? = PayloadDecoder.decode(result) else {
            throw .appleDataRejected(
                app: app.name, environment: page.environment,
                problem: "signed transaction \(index) of the page (apple request id "
                    + "\(page.appleRequestID ?? "none")) is \(result.status.rawValue): \(result.message)")
        }
        return transaction
    }
}

/// Transactions in first-seen order, one per `transactionId`, the newest `signedDate` winning.
private struct TransactionCollection {
    struct Entry {
        var jws: String
        var transaction: Transaction
    }
    private(set) var entries: [Entry] = []
    private var positions: [String: Int] = [:]

    mutating func add(jws: String, transaction: Transaction) {
        let id = transaction.transactionId
        guard !id.isEmpty, let position = positions[id] else {
            if !id.isEmpty { positions[id] = entries.count }
            entries.append(Entry(jws: jws, transaction: transaction))
            return
        }
        let known = entries[position].transaction.signedDate?.unixMilliseconds ?? .min
        if (transaction.signedDate?.unixMilliseconds ?? .min) >= known {
            entries[position] = Entry(jws: jws, transaction: transaction)
        }
    }
}
