import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import Cryptography
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import Metrics
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// Signed transactions from a test PKI shaped like Apple's, and a verifier trusting its root.
struct TransactionMint: Sendable {
    static let referenceTime = Date(timeIntervalSince1970: 1_700_000_000)
    let pki: AppStoreTestPKI
    let verifier: SignedDataVerifier

    init() throws {
        pki = try AppStoreTestPKI(referenceTime: Self.referenceTime)
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [pki.root.certificate]))
    }

    func jws(
        _ id: String, signedDate: Int64 = 1_700_000_000_000, bundleId: String = "com.example.app",
        environment: String = "Production", _ extra: [String: Any] = [:], signer: SignedDataSigner? = nil
    ) throws -> String {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": "1000", "bundleId": bundleId, "productId": "pro.monthly",
            "purchaseDate": signedDate - 1000, "signedDate": signedDate, "environment": environment,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "quantity": 1,
        ]
        payload.merge(extra) { $1 }
        let data = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try (signer ?? pki.signer).sign(payload: data)
    }
}

@Suite(.serialized) struct GetHistoryHandlerTests {
    private func handler(
        _ fixture: UpstreamFixture, _ mint: TransactionMint, maxPages: Int = 50,
        coalescing: CoalescingMetrics = CoalescingMetrics(registry: MetricsRegistry())
    ) -> GetHistoryHandler {
        GetHistoryHandler(
            client: fixture.client, verifier: mint.verifier, maxPages: maxPages, clock: SystemClock(),
            coalescing: coalescing)
    }

    private func request(_ configure: (inout GetHistoryRequest) -> Void = { _ in }) -> GetHistoryRequest {
        var request = GetHistoryRequest()
        request.transactionId = "2000000123"
        configure(&request)
        return request
    }

    private func answer(_ handler: GetHistoryHandler, _ request: GetHistoryRequest, remaining: Duration? = .seconds(5))
        async -> Result<GetHistoryResponse, GatewayError>
    {
        do throws(GatewayError) {
            return .success(try await handler.handle(request, remaining: remaining))
        } catch {
            return .failure(error)
        }
    }

    @Test func everyFilterReachesApple() async throws {
        let fixture = try UpstreamFixture()
        let mint = try TransactionMint()
        let filtered = request {
            $0.revision = "r0"
            $0.startDate = ProtoTimestamp(unixMilliseconds: 1_690_000_000_123)
            $0.endDate = ProtoTimestamp(unixMilliseconds: 1_701_000_000_000)
            $0.productIds = ["p1", "p2"]
            $0.productTypes = [.nonConsumable, .unspecified, .nonRenewable]
            $0.sort = .ascending
            $0.subscriptionGroupIdentifiers = ["g"]
            $0.inAppOwnershipType = .purchased
            $0.revoked = .onlyRevoked
            $0.environment = .sandbox
        }
        _ = try await handler(fixture, mint).handle(filtered, remaining: nil)
        let sent = try #require(fixture.fake.requests.first)
        #expect(sent.path == "/sandbox/inApps/v2/history/2000000123")
        #expect(
            sent.queryItems.map { "\($0.name)=\($0.value)" } == [
                "revision=r0", "startDate=1690000000123", "endDate=1701000000000", "productId=p1", "productId=p2",
                "productType=NON_CONSUMABLE", "productType=NON_RENEWABLE", "sort=ASCENDING",
                "subscriptionGroupIdentifier=g", "inAppOwnershipType=PURCHASED", "revoked=true",
            ])
        _ = try await handler(fixture, mint).handle(
            request {
                $0.revoked = .excludeRevoked; $0.sort = .descending
            }, remaining: nil)
        #expect(
            fixture.fake.requests.last?.queryItems.map { "\($0.name)=\($0.value)" } == [
                "sort=DESCENDING", "revoked=false",
            ])
    }

    @Test(arguments: [
        "transaction_id", "product_types[1]", "sort", "in_app_ownership_type", "revoked", "environment", "start_date",
        "end_date", "product_ids[1]",
    ])
    func badValuesNameTheirField(field: String) async throws {
        let change: (inout GetHistoryRequest) -> Void = { r in
            switch field {
            case "transaction_id": r.transactionId = ""
            case "product_types[1]": r.productTypes = [.consumable, .unrecognized(9)]
            case "sort": r.sort = .unrecognized(7)
            case "in_app_ownership_type": r.inAppOwnershipType = .unrecognized(3)
            case "revoked": r.revoked = .unrecognized(3)
            case "environment": r.environment = .xcode
            case "start_date": r.startDate = ProtoTimestamp(unixMilliseconds: -5)
            case "end_date":
                r.startDate = ProtoTimestamp(unixMilliseconds: 2_000)
                r.endDate = ProtoTimestamp(unixMilliseconds: 2_000)
            default: r.productIds = ["a", ""]
            }
        }
        let fixture = try UpstreamFixture()
        let result = await answer(handler(fixture, try TransactionMint()), request(change))
        // Contract limits come as BadRequest field violations, the rest as one invalid argument.
        let named: String
        switch result {
        case .failure(.invalidArgument(let field, _)): named = field
        case .failure(.badRequest(let violations)) where violations.count == 1: named = violations[0].field
        default:
            Issue.record("expected INVALID_ARGUMENT for \(field), got \(result)")
            return
        }
        #expect(named == field)
        #expect(fixture.fake.requests.isEmpty)
    }

    @Test func unknownAppIsNotFound() async throws {
        let fixture = try UpstreamFixture()
        let result = await answer(handler(fixture, try TransactionMint()), request { $0.app = "nope" })
        guard case .failure(let error) = result else { return #expect(Bool(false)) }
        #expect(error.rpcStatus.code == .notFound)
    }

    @Test func aPageIsVerifiedAndDecoded() async throws {
        let mint = try TransactionMint()
        let signed = [try mint.jws("t1"), try mint.jws("t2", signedDate: 1_700_000_500_000)]
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed, revision: "rev-9", hasMore: true) }
        let response = try await handler(fixture, mint).handle(request(), remaining: .seconds(5))
        #expect(response.appAppleId == 1234)
        #expect(response.bundleId == "com.example.app")
        #expect(response.environment == .production)
        #expect(response.hasMore)
        #expect(response.revision == "rev-9")
        #expect(response.signedTransactions == signed)
        #expect(response.transactions.map(\.transactionId) == ["t1", "t2"])
        #expect(response.transactions[1].signedDate?.unixMilliseconds == 1_700_000_500_000)
        #expect(!response.transactions[0].rawJson.isEmpty)
        #expect(response.pagesFetched == 1)
        #expect(response.latestReceiptInfo.isEmpty)
        #expect(fixture.fake.requests.count == 1, "without all_pages only one page is fetched")
    }

    @Test func aTransactionFailingVerificationIsDataLoss() async throws {
        let mint = try TransactionMint()
        let stranger = try AppStoreTestPKI(referenceTime: TransactionMint.referenceTime, rootName: "Stranger Root")
        let signed = [try mint.jws("t1"), try mint.jws("t2", signer: stranger.signer)]
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed) }
        let result = await answer(handler(fixture, mint), request())
        guard case .failure(let error) = result else { return #expect(Bool(false)) }
        #expect(error.rpcStatus.code == .dataLoss)
        #expect(error.rpcStatus.message.contains("signed transaction 1"))
        // Data for another app is rejected the same way.
        let otherApp = [try mint.jws("t3", bundleId: "com.other.app")]
        fixture.fake.setScript { _, _ in AppleJSON.history(otherApp) }
        guard case .failure(let bound) = await answer(handler(fixture, mint), request()) else {
            return #expect(Bool(false))
        }
        #expect(bound.rpcStatus.code == .dataLoss)
    }

    @Test func allPagesFollowsRevisionsAndDedupes() async throws {
        let mint = try TransactionMint()
        // Six pages; t3 appears on page 2 and again, changed (newer signedDate), on page 5.
        var pages: [[String]] = []
        for page in 1...6 {
            var signed = [try mint.jws("p\(page)a", signedDate: 1_700_000_000_000 + Int64(page))]
            if page == 2 { signed.append(try mint.jws("t3", signedDate: 1_700_000_000_100)) }
            if page == 5 { signed.append(try mint.jws("t3", signedDate: 1_700_000_000_900, ["isUpgraded": true])) }
            pages.append(signed)
        }
        let pageSet = pages
        let fixture = try UpstreamFixture { request, _ in
            let revision = request.queryItems.first(where: { $0.name == "revision" })?.value ?? "r0"
            let number = Int(revision.dropFirst()) ?? 0
            return AppleJSON.history(pageSet[number], revision: "r\(number + 1)", hasMore: number + 1 < 6)
        }
        let response = try await handler(fixture, mint).handle(request { $0.allPages = true }, remaining: .seconds(10))
        #expect(response.pagesFetched == 6)
        #expect(!response.hasMore)
        #expect(response.revision == "r6")
        #expect(response.transactions.map(\.transactionId) == ["p1a", "p2a", "t3", "p3a", "p4a", "p5a", "p6a"])
        let t3 = try #require(response.transactions.first { $0.transactionId == "t3" })
        #expect(t3.signedDate?.unixMilliseconds == 1_700_000_000_900)
        #expect(t3.isUpgraded)
        #expect(response.signedTransactions.count == 7)
        #expect(response.signedTransactions[2] == pages[4][1])
        let revisions = fixture.fake.requests.map {
            $0.queryItems.first(where: { $0.name == "revision" })?.value ?? "-"
        }
        #expect(revisions == ["-", "r1", "r2", "r3", "r4", "r5"])
    }

    @Test func allPagesStopsAtMaxPagesAndOnAnUnchangedRevision() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { request, number in
            AppleJSON.history((try? mint.jws("x\(number)")).map { [$0] } ?? [], revision: "r\(number)", hasMore: true)
        }
        let capped = try await handler(fixture, mint, maxPages: 3).handle(
            request { $0.allPages = true }, remaining: nil)
        #expect(capped.pagesFetched == 3)
        #expect(capped.hasMore)
        #expect(capped.revision == "r3")
        fixture.fake.setScript { _, _ in AppleJSON.history([], revision: "same", hasMore: true) }
        let stuck = try await handler(fixture, mint).handle(
            request {
                $0.allPages = true; $0.revision = "old"
            }, remaining: nil)
        #expect(stuck.pagesFetched == 2)
        #expect(stuck.hasMore)
    }

    @Test func identicalRequestsInFlightShareOneUpstreamCall() async throws {
        let mint = try TransactionMint()
        let signed = [try mint.jws("t1")]
        let events = CoalescingEvents()
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(300))
            return AppleJSON.history(signed)
        }
        let handler = handler(fixture, mint, coalescing: events.metrics)
        let responses = try await withThrowingTaskGroup(of: GetHistoryResponse.self) { group in
            for index in 0..<12 {
                group.addTask {
                    // Two distinct requests: 10 identical plus 2 of another transaction id.
                    let id = index < 10 ? "2000000123" : "2000000999"
                    return try await handler.handle(self.request { $0.transactionId = id }, remaining: .seconds(5))
                }
            }
            return try await group.reduce(into: [GetHistoryResponse]()) { $0.append($1) }
        }
        #expect(responses.count == 12)
        #expect(responses.allSatisfy { $0.transactions.map(\.transactionId) == ["t1"] })
        #expect(fixture.fake.requests.count == 2)
        #expect(handler.callsInFlight == 0)
        // The metric counts the callers that did not call Apple themselves: 9 + 1.
        #expect(events.coalesced == ["example/getTransactionHistory": 10])
    }

    @Test func aFollowerLeavingDoesNotCancelTheSharedCallButTheLeaderTakesItAlong() async throws {
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(600))
            return AppleJSON.history([])
        }
        let handler = handler(fixture, try TransactionMint())
        let request = request()
        let leader = Task { await answer(handler, request) }
        try await Task.sleep(for: .milliseconds(100))
        let leaving = Task { await answer(handler, request) }
        try await Task.sleep(for: .milliseconds(100))
        leaving.cancel()
        guard case .failure(.cancelled) = await leaving.value else { return #expect(Bool(false)) }
        guard case .success = await leader.value else {
            return #expect(Bool(false), "the leader still gets the answer")
        }
        #expect(fixture.fake.requests.count == 1)
        #expect(fixture.http.metrics.transfersCancelled == 0)

        // The upstream call runs in the leader's task: when the leader leaves, it is cancelled, and the caller
        // still waiting calls Apple itself.
        let first = Task { await answer(handler, request) }
        try await Task.sleep(for: .milliseconds(100))
        let second = Task { await answer(handler, request) }
        try await Task.sleep(for: .milliseconds(100))
        first.cancel()
        guard case .failure(.cancelled) = await first.value else { return #expect(Bool(false)) }
        guard case .success = await second.value else { return #expect(Bool(false), "the follower calls again") }
        #expect(fixture.http.metrics.transfersCancelled == 1)
        #expect(fixture.fake.requests.count == 3)
        #expect(handler.callsInFlight == 0)
    }

    @Test func aJoinerKeepsItsOwnLongerDeadline() async throws {
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(700))
            return AppleJSON.history([])
        }
        let handler = handler(fixture, try TransactionMint())
        let request = request()
        let hurried = Task { await answer(handler, request, remaining: .milliseconds(400)) }
        try await Task.sleep(for: .milliseconds(50))
        let patient = Task { await answer(handler, request, remaining: .seconds(3)) }
        guard case .failure(let error) = await hurried.value else { return #expect(Bool(false)) }
        #expect(error.rpcStatus.code == .deadlineExceeded)
        guard case .success = await patient.value else { return #expect(Bool(false), "the later deadline still holds") }
        #expect(fixture.fake.requests.count == 2)
    }

    @Test func theLegacyViewMatchesHandCheckedValues() async throws {
        let mint = try TransactionMint()
        let signed = [
            // A free-trial introductory offer, bought 2023-10-24 12:01:40.123 UTC, refunded for an app issue.
            try mint.jws(
                "t1", signedDate: 1_700_000_000_000,
                [
                    "purchaseDate": 1_698_148_900_123, "originalPurchaseDate": 1_690_000_000_000,
                    "expiresDate": 1_700_827_300_000, "revocationDate": 1_701_000_000_000, "revocationReason": 1,
                    "offerType": 1, "offerDiscountType": "FREE_TRIAL", "price": 0, "webOrderLineItemId": "w1",
                    "subscriptionGroupIdentifier": "g1", "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                    "inAppOwnershipType": "FAMILY_SHARED",
                ]),
            // A paid intro offer from before offerDiscountType existed (price decides).
            try mint.jws("t2", ["offerType": 1, "price": 990]),
            // An offer code with a free trial: not flagged as a trial, the reference name is kept.
            try mint.jws("t3", ["offerType": 3, "offerIdentifier": "SPRING", "offerDiscountType": "FREE_TRIAL"]),
            // A promotional offer on an upgraded subscription.
            try mint.jws("t4", ["offerType": 2, "offerIdentifier": "promo-1", "isUpgraded": true]),
            // An intro offer with neither offerDiscountType nor price: read as a free trial.
            try mint.jws("t5", ["offerType": 1]),
        ]
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed) }
        let response = try await handler(fixture, mint).handle(
            request { $0.includeLatestReceiptInfo = true }, remaining: nil)
        let info = response.latestReceiptInfo
        try #require(info.count == 5)
        var expected = LegacyReceiptInfo()
        expected.transactionId = "t1"
        expected.originalTransactionId = "1000"
        expected.productId = "pro.monthly"
        expected.webOrderLineItemId = "w1"
        expected.subscriptionGroupIdentifier = "g1"
        expected.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        expected.quantity = "1"
        expected.purchaseDate = "2023-10-24 12:01:40 Etc/GMT"
        expected.purchaseDateMs = "1698148900123"
        expected.purchaseDatePst = "2023-10-24 05:01:40 America/Los_Angeles"
        expected.originalPurchaseDate = "2023-07-22 04:26:40 Etc/GMT"
        expected.originalPurchaseDateMs = "1690000000000"
        expected.originalPurchaseDatePst = "2023-07-21 21:26:40 America/Los_Angeles"
        expected.expiresDate = "2023-11-24 12:01:40 Etc/GMT"
        expected.expiresDateMs = "1700827300000"
        expected.expiresDatePst = "2023-11-24 04:01:40 America/Los_Angeles"
        expected.cancellationDate = "2023-11-26 12:00:00 Etc/GMT"
        expected.cancellationDateMs = "1701000000000"
        expected.cancellationDatePst = "2023-11-26 04:00:00 America/Los_Angeles"
        expected.cancellationReason = "1"
        expected.inAppOwnershipType = "FAMILY_SHARED"
        expected.isTrialPeriod = "true"
        expected.isInIntroOfferPeriod = "false"
        #expect(info[0] == expected)
        #expect((info[1].isTrialPeriod, info[1].isInIntroOfferPeriod) == ("false", "true"))
        #expect(
            (info[2].isTrialPeriod, info[2].isInIntroOfferPeriod, info[2].offerCodeRefName) == (
                "false", "false", "SPRING"
            ))
        #expect(info[2].promotionalOfferId.isEmpty)
        #expect((info[3].promotionalOfferId, info[3].isUpgraded, info[3].offerCodeRefName) == ("promo-1", "true", ""))
        #expect((info[4].isTrialPeriod, info[4].isInIntroOfferPeriod) == ("true", "false"))
        #expect(info[1].cancellationDate.isEmpty && info[1].cancellationReason.isEmpty && info[1].isUpgraded.isEmpty)
    }

    @Test func theServiceAnswersGetHistoryThroughItsMethodTable() async throws {
        let mint = try TransactionMint()
        let signed = [try mint.jws("t1")]
        let fixture = try UpstreamFixture { _, _ in AppleJSON.history(signed) }
        let verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [mint.pki.root.certificate]))
        let service = AppStoreGatewayService(
            configuration: fixture.configuration, verifier: verifier, client: fixture.client,
            resumeTokenKeys: ResumeTokenKeyRing(keys: [Array(repeating: 7, count: 32)]))
        guard case .unary(let method)? = service.methods["/\(AppStoreGatewayService.name)/GetHistory"] else {
            Issue.record("GetHistory is not a unary method")
            return
        }
        let context = ServerContext(method: "GetHistory", metadata: [], deadline: nil)
        let framed = try await method(request().serializedBytes(), context)
        let response = try GetHistoryResponse(serializedBytes: Array(framed.payload))
        #expect(response.transactions.map(\.transactionId) == ["t1"])
        do {
            _ = try await method(request { $0.transactionId = "" }.serializedBytes(), context)
            Issue.record("expected INVALID_ARGUMENT")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        #expect(service.methods["/\(AppStoreGatewayService.name)/VerifyJWS"] != nil)
    }
}

/// Reads the coalesced calls per app/endpoint.
final class CoalescingEvents: Sendable {
    let metrics = CoalescingMetrics(registry: MetricsRegistry())

    var coalesced: [String: Int] {
        Dictionary(
            uniqueKeysWithValues: metrics.coalesced.series.map { labels, counter in
                (labels.joined(separator: "/"), Int(counter.current))
            })
    }
}
