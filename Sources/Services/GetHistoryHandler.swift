import AppStoreClient
import AppStoreDomain
import Foundation
import GatewayFoundation
import Metrics
import ProtoCodec
import SignedData
import SubscriptionState
import Synchronization

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
/// - Identical requests in flight share one upstream call (`SingleFlight`, keyed by the request's bytes as
///   received), each caller keeping its own deadline and cancellation; the first caller's own task calls Apple.
/// - A page's transactions are verified in parallel, at most `verificationWidth` at a time (the cores), in
///   page order; the verifier's caches make a page seen again cost no chain validation and no ECDSA.
/// - The call's log line notes where its time went: `handler_us` (the whole handler), `upstream_us` (awaiting
///   Apple's pages: rate limit, token, the upstream client, Apple itself) and `verify_us` (verifying them);
///   a caller that shared another's upstream call notes only `handler_us`.
/// - With a subscription state, the answer's transactions are handed to it (`feed`) once the answer is complete,
///   never awaited: the caller's answer does not wait for the state's commit nor fail with its store.
package struct GetHistoryHandler: Sendable {
    let client: AppStoreAPIClient
    let verifier: SignedDataVerifier
    let maxPages: Int
    let maxResponseBytes: Int
    let clock: any GatewayClock
    /// Most transactions of a page verified at once.
    let verificationWidth: Int
    let flights = SingleFlight<[UInt8], GetHistoryResponse>()
    /// The environment behind each revision handed out, so paging on asks it directly (`auto` apps).
    let revisions = RevisionEnvironments()
    /// Where the calls that joined an identical one in flight count.
    let coalescing: CoalescingMetrics
    /// Where the transactions of an answer go once it is complete: the subscription state, as an Apple read (nil:
    /// the gateway keeps none). Set by the service that keeps the state.
    var feed: AppleReadFeed?

    /// A handler calling Apple through `client`, verifying with `verifier`, paging at most `maxPages` and
    /// (with `all_pages`) at most about `maxResponseBytes` of response, verifying at most `verificationWidth`
    /// transactions of a page at once (default: one per core); calls that share another's count in `coalescing`.
    package init(
        client: AppStoreAPIClient, verifier: SignedDataVerifier, maxPages: Int, maxResponseBytes: Int = 4_000_000,
        clock: any GatewayClock, verificationWidth: Int = ProcessInfo.processInfo.activeProcessorCount,
        coalescing: CoalescingMetrics = CoalescingMetrics(registry: MetricsRegistry())
    ) {
        self.coalescing = coalescing
        self.client = client
        self.verifier = verifier
        self.maxPages = max(1, maxPages)
        self.maxResponseBytes = max(1024, maxResponseBytes)
        self.clock = clock
        self.verificationWidth = max(1, verificationWidth)
    }

    /// Upstream calls currently shared by callers (for tests and metrics).
    package var callsInFlight: Int { flights.inFlight }

    /// Answers `request`; `remaining` is the time left before the caller's deadline (nil: none). `received` is
    /// the request's bytes as they arrived (nil: serialized again), the key identical calls share a flight by.
    /// Any per-caller authorization must have passed before: callers with the same bytes share one answer.
    package func handle(_ request: GetHistoryRequest, received: [UInt8]? = nil, remaining: Duration?)
        async throws(GatewayError) -> GetHistoryResponse
    {
        let start = clock.monotonicNow()
        defer { note("handler_us", since: start) }
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
            key: received ?? request.serializedBytes(),
            joined: { coalescing.joined(app: app.name, endpoint: "getTransactionHistory") },
            hasTime: { hasTimeForAnotherPage(deadline) }
        ) { [self] () async throws(GatewayError) in
            try await fetch(request, plan: plan, app: app, deadline: deadline)
        }
    }

    private func fetch(
        _ request: GetHistoryRequest, plan: HistoryCallPlan, app: App, deadline: MonotonicInstant?
    ) async throws(GatewayError) -> GetHistoryResponse {
        var query = plan.query
        var environment = plan.environment
        var collected = TransactionCollection()
        var response = GetHistoryResponse()
        var pages: Int32 = 0
        // Estimated response bytes so far, and the largest page seen (the guess for the next one).
        var responseBytes = 0
        var largestPage = 0
        // Time spent awaiting Apple and verifying, for the call's log line.
        var upstream = Duration.zero
        var verification = Duration.zero
        defer {
            note("upstream_us", upstream)
            note("verify_us", verification)
        }
        while true {
            let asked = clock.monotonicNow()
            let page = try await client.transactionHistory(
                transactionID: plan.transactionID, query: query, app: app, environment: environment, deadline: deadline)
            let answered = clock.monotonicNow()
            upstream += answered - asked
            environment = page.environment
            let transactions = try await verify(page, app: app)
            verification += clock.monotonicNow() - answered
            var withPage = collected
            var pageBytes = 0
            withPage.reserve(transactions.count)
            for (jws, transaction) in zip(page.signedTransactions, transactions) {
                // Sizes only bound what `all_pages` adds after the first page: one page alone needs none.
                if request.allPages {
                    pageBytes += Self.estimatedBytes(jws: jws, transaction, legacy: request.includeLatestReceiptInfo)
                }
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
            response.environment =
                AppStoreEnvironment(rawValue: page.environmentName)?.protoEnvironment
                ?? page.environment.protoEnvironment
            response.hasMore = page.hasMore
            response.revision = page.revision
            guard request.allPages, page.hasMore, !page.revision.isEmpty, page.revision != query.revision,
                pages < maxPages, responseBytes + largestPage <= maxResponseBytes, hasTimeForAnotherPage(deadline)
            else { break }
            query = query.nextPage(revision: page.revision)
        }
        response.pagesFetched = pages
        if let environment { revisions.remember(environment, bundleID: app.bundleId, revision: response.revision) }
        // The collection's arrays become the answer's as they are (shared storage, no copy of each entry).
        response.signedTransactions = collected.signed
        response.transactions = collected.transactions
        if let feed {
            // The answer's transactions, one per `transactionId` as the caller gets them: every page in it verified.
            var verified = VerifiedSnapshots()
            verified.transactions.reserveCapacity(collected.transactions.count)
            for (jws, transaction) in zip(collected.signed, collected.transactions) {
                verified.transactions.append(SignedTransaction(jws: jws, payload: transaction))
            }
            feed.observe(verified, app: app)
        }
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

    /// `page`'s transactions verified (chain, app, answering environment) and decoded, in page order.
    ///
    /// On the caller's loop while each one needs only cache lookups (its chain and its signature were verified
    /// before: a page seen again). From the first that needs more (ECDSA, a chain validation, an OCSP fetch),
    /// the rest of the page moves off the loop in one hop (`offLoop`) and is verified there by at most
    /// `verificationWidth` workers at once: this task and one child task each for the others. Each worker
    /// claims the next transaction in page order until none is left, so a worker whose thread woke late takes
    /// fewer, not a fixed half. (A child task per transaction gained nothing: starting one, and waking a thread
    /// for it, costs about what verifying a transaction the caches already know does.) Any failure fails the
    /// page: once one has failed the workers stop claiming. One counter hands the transactions out in order,
    /// so what was verified is a prefix of the page, and the first failure in page order is the answer.
    func verify(_ page: TransactionHistoryPage, app: App) async throws(GatewayError)
        -> [Transaction]
    {
        let check = try PageCheck(page: page, app: app, verifier: verifier)
        let signed = page.signedTransactions
        var transactions: [Transaction] = []
        transactions.reserveCapacity(signed.count)
        while transactions.count < signed.count,
            let known = check.cachedTransaction(signed[transactions.count], transactions.count)
        {
            transactions.append(try known.get())
        }
        guard transactions.count < signed.count else { return transactions }
        let rest = transactions.count..<signed.count
        let width = max(1, min(verificationWidth, rest.count))
        let claims = PageClaims(rest)
        let verified = await offLoop {
            await withTaskGroup(of: [(Int, Result<Transaction, GatewayError>)].self) { group in
                for _ in 1..<width { group.addTask { await check.transactions(signed, claims) } }
                var verified = await check.transactions(signed, claims)
                for await results in group { verified += results }
                return verified
            }
        }
        // In page order: the claimed transactions are a prefix of `rest`, and the first failure among them
        // throws before a gap after it could be reached.
        var results = [Result<Transaction, GatewayError>?](repeating: nil, count: rest.count)
        for (index, result) in verified { results[index - rest.lowerBound] = result }
        for result in results {
            guard let result else { break }
            transactions.append(try result.get())
        }
        guard transactions.count == signed.count else {
            throw .appleDataRejected(
                app: app.name, environment: page.environment, problem: "the page could not be verified in full")
        }
        return transactions
    }

    /// Notes `duration` in whole microseconds under `name` on the call's log line.
    private func note(_ name: String, _ duration: Duration) {
        CallAnnotations.current?.note(name, String(duration.wholeNanoseconds / 1000))
    }

    private func note(_ name: String, since start: MonotonicInstant) {
        note(name, clock.monotonicNow() - start)
    }
}

/// What verifying one page's transactions needs, shared by the child tasks verifying them.
private struct PageCheck: Sendable {
    let verifier: SignedDataVerifier
    let requirements: VerificationRequirements
    let app: String
    let environment: AppleEnvironment
    let appleRequestID: String?

    init(page: TransactionHistoryPage, app: App, verifier: SignedDataVerifier)
        throws(GatewayError)
    {
        do {
            requirements = try VerificationRequirements(
                bundleID: app.bundleId, appAppleID: app.appAppleId,
                environment: AppStoreEnvironment(page.environment))
        } catch {
            throw .invalidArgument(field: "environment", problem: "\(error.description) (set apps[].appAppleId)")
        }
        self.verifier = verifier
        self.app = app.name
        environment = page.environment
        appleRequestID = page.appleRequestID
    }

    /// The transactions this worker claimed from `claims`, each verified, with its index in the page: it claims
    /// the next one until none is left or one has failed (its own, or another worker's).
    func transactions(_ signed: [String], _ claims: PageClaims) async -> [(Int, Result<Transaction, GatewayError>)] {
        var results: [(Int, Result<Transaction, GatewayError>)] = []
        while let index = claims.next() {
            let result = await transaction(signed[index], index)
            results.append((index, result))
            if case .failure = result {
                claims.fail()
                break
            }
        }
        return results
    }

    /// Transaction `index` of the page verified and decoded. Runs the chain validation in the calling task,
    /// and awaits any OCSP fetch (online checks).
    func transaction(_ jws: String, _ index: Int) async -> Result<Transaction, GatewayError> {
        decoded(await verifier.verifyOnline(jws, kind: .transaction, requirements: requirements), index)
    }

    /// Transaction `index` of the page verified and decoded when that needs nothing but cache lookups (see
    /// `verifyIfCached`); nil when it needs more.
    func cachedTransaction(_ jws: String, _ index: Int) -> Result<Transaction, GatewayError>? {
        verifier.verifyIfCached(jws, kind: .transaction, requirements: requirements).map { decoded($0, index) }
    }

    private func decoded(_ result: VerificationResult, _ index: Int) -> Result<Transaction, GatewayError> {
        if result.status == .retryableFailure {
            return .failure(
                .revocationStatusUnavailable(app: app, problem: "signed transaction \(index): \(result.message)"))
        }
        guard result.isVerified, case .transaction(let transaction)? = PayloadDecoder.decode(result) else {
            return .failure(
                .appleDataRejected(
                    app: app, environment: environment,
                    problem: "signed transaction \(index) of the page (apple request id "
                        + "\(appleRequestID ?? "none")) is \(result.status.rawValue): \(result.message)"))
        }
        return .success(transaction)
    }
}

/// The transactions of a page still to verify, handed out in page order to the workers verifying them, one at a
/// time, by one counter: the indices handed out are always a prefix of the range. Once one has failed, `next`
/// answers nil (a worker that asked at that very moment may still get one more).
private final class PageClaims: Sendable {
    private let position: Atomic<Int>
    private let end: Int
    private let failed = Atomic<Bool>(false)

    init(_ range: Range<Int>) {
        position = Atomic(range.lowerBound)
        end = range.upperBound
    }

    /// The next transaction's index; nil once all were handed out or one has failed.
    func next() -> Int? {
        guard !failed.load(ordering: .acquiring) else { return nil }
        let index = position.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < end ? index : nil
    }

    /// No transaction is handed out after this.
    func fail() { failed.store(true, ordering: .releasing) }
}

/// Transactions in first-seen order, one per `transactionId`, the newest `signedDate` winning: the JWS and its
/// decoding side by side, in the two arrays the answer carries.
private struct TransactionCollection {
    private(set) var signed: [String] = []
    private(set) var transactions: [Transaction] = []
    private var positions: [String: Int] = [:]

    /// Room for `count` more entries.
    mutating func reserve(_ count: Int) {
        signed.reserveCapacity(signed.count + count)
        transactions.reserveCapacity(transactions.count + count)
        positions.reserveCapacity(positions.count + count)
    }

    mutating func add(jws: String, transaction: Transaction) {
        let id = transaction.transactionId
        guard !id.isEmpty, let position = positions[id] else {
            if !id.isEmpty { positions[id] = transactions.count }
            signed.append(jws)
            transactions.append(transaction)
            return
        }
        let known = transactions[position].signedDate?.unixMilliseconds ?? .min
        if (transaction.signedDate?.unixMilliseconds ?? .min) >= known {
            signed[position] = jws
            transactions[position] = transaction
        }
    }
}
