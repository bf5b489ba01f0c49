import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Configuration
import Foundation
import GRPC
import GatewayFoundation
import HTTPServer
import ProtoCodec
import SignedData
import Synchronization
import Testing

@testable import Cryptography
@testable import Services

private typealias MassStatus = GetStatusOfSubscriptionRenewalDateExtensionsRequest

/// The App Store Server API RPCs of issue 18: each operation's request to Apple (path, query, body, environment),
/// its refusals, and its decoding of Apple's answers through the shared call path against a scripted Apple.
@Suite(.serialized) struct AppleOperationTests {
    // MARK: Requests to Apple

    @Test func everyOperationBuildsApplesRequest() throws {
        let info = try AppleOperation.getTransactionInfo.plan(
            GetTransactionInfoRequest(transactionId: "2000000123", environment: .sandbox))
        #expect(info == AppleRequest(.getTransactionInfo, pathValues: ["2000000123"], environment: .sandbox))
        #expect(info.endpoint.path(values: info.pathValues) == "/inApps/v1/transactions/2000000123")

        let statuses = try AppleOperation.getAllSubscriptionStatuses.plan(
            GetAllSubscriptionStatusesRequest(transactionId: "1", status: [.expired, .active, .expired]))
        #expect(statuses.query == "status=1&status=2")
        #expect(statuses.endpoint == .getAllSubscriptionStatuses && statuses.environment == nil)

        let order = try AppleOperation.lookUpOrderId.plan(LookUpOrderIdRequest(orderId: "MTABC123"))
        #expect(order.endpoint.path(values: order.pathValues) == "/inApps/v1/lookup/MTABC123")

        let refunds = try AppleOperation.getRefundHistory.plan(
            GetRefundHistoryRequest(transactionId: "5", revision: "a+b/c"))
        #expect(refunds.query == "revision=a%2Bb%2Fc")
        #expect(refunds.endpoint.path(values: refunds.pathValues) == "/inApps/v2/refund/lookup/5")

        let app = try AppleOperation.getAppTransactionInfo.plan(GetAppTransactionInfoRequest(transactionId: "7"))
        #expect(app.endpoint.path(values: app.pathValues) == "/inApps/v1/transactions/appTransactions/7")

        let consumption = try AppleOperation.sendConsumptionInformation.plan(
            SendConsumptionInformationRequest(
                transactionId: "9", customerConsented: true, deliveryStatus: .undeliveredServerOutage,
                refundPreference: .decline, consumption: .consumptionPercentage(0)))
        #expect(consumption.endpoint.method == HTTPMethod.put)
        #expect(
            text(consumption.body) == #"{"consumptionPercentage":0,"customerConsented":true,"#
                + #""deliveryStatus":"UNDELIVERED_SERVER_OUTAGE","refundPreference":"DECLINE","#
                + #""sampleContentProvided":false}"#)
        let minimal = try AppleOperation.sendConsumptionInformation.plan(
            SendConsumptionInformationRequest(transactionId: "9", customerConsented: true, deliveryStatus: .delivered))
        #expect(
            text(minimal.body)
                == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)

        let extend = try AppleOperation.extendSubscriptionRenewalDate.plan(
            ExtendSubscriptionRenewalDateRequest(
                transactionId: "11", extendByDays: 90, extendReasonCode: .serviceIssueOrOutage,
                requestIdentifier: "r-1"))
        #expect(text(extend.body) == #"{"extendByDays":90,"extendReasonCode":3,"requestIdentifier":"r-1"}"#)
        #expect(extend.endpoint.path(values: extend.pathValues) == "/inApps/v1/subscriptions/extend/11")

        let mass = try AppleOperation.extendRenewalDatesForAllActiveSubscribers.plan(
            ExtendRenewalDatesForAllActiveSubscribersRequest(
                extendByDays: 1, requestIdentifier: "m\"1", storefrontCountryCodes: ["USA"], productId: "pro"))
        #expect(
            text(mass.body) == #"{"extendByDays":1,"extendReasonCode":0,"productId":"pro","requestIdentifier":"m\"1","#
                + #""storefrontCountryCodes":["USA"]}"#)
        #expect(mass.pathValues.isEmpty && mass.endpoint.method == .post)

        let massStatus = try AppleOperation.getStatusOfSubscriptionRenewalDateExtensions.plan(
            GetStatusOfSubscriptionRenewalDateExtensionsRequest(productId: "pro.monthly", requestIdentifier: "abc-1"))
        #expect(
            massStatus.endpoint.path(values: massStatus.pathValues)
                == "/inApps/v1/subscriptions/extend/mass/pro.monthly/abc-1")

        let test = try AppleOperation.requestTestNotification.plan(RequestTestNotificationRequest())
        #expect(test.endpoint == .requestTestNotification && test.body == nil)
        let testStatus = try AppleOperation.getTestNotificationStatus.plan(
            GetTestNotificationStatusRequest(testNotificationToken: "tok_1"))
        #expect(testStatus.endpoint.path(values: testStatus.pathValues) == "/inApps/v1/notifications/test/tok_1")

        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        let set = try AppleOperation.setAppAccountToken.plan(
            SetAppAccountTokenRequest(transactionId: "3", appAccountToken: token))
        #expect(text(set.body) == #"{"appAccountToken":"\#(token)"}"#)
        #expect(set.endpoint.path(values: set.pathValues) == "/inApps/v1/transactions/3/appAccountToken")

        let finish = try AppleOperation.finishTransaction.plan(FinishTransactionRequest(transactionId: "4"))
        #expect(finish.endpoint.path(values: finish.pathValues) == "/inApps/v1/transactions/4/finish")
        #expect(finish.endpoint.method == .post && finish.body == nil)
    }

    @Test func generatedRequestIdentifiersAreUUIDs() throws {
        let extend = try AppleOperation.extendSubscriptionRenewalDate.plan(
            ExtendSubscriptionRenewalDateRequest(transactionId: "11", extendByDays: 5))
        let body = try JSONSerialization.jsonObject(with: Data(extend.body ?? [])) as? [String: Any]
        #expect(UUID(uuidString: body?["requestIdentifier"] as? String ?? "") != nil)
        #expect(body?["extendReasonCode"] as? Int == 0)
    }

    /// The fields a plan refuses (BadRequest), or a description of any other outcome.
    private func refused<Request, Response>(
        _ operation: AppleOperation<Request, Response>, _ request: Request
    ) -> [String] {
        do throws(GatewayError) {
            _ = try operation.plan(request)
            return ["accepted"]
        } catch {
            guard case .badRequest(let violations) = error else { return ["\(error)"] }
            return violations.map(\.field)
        }
    }

    @Test func hostileValuesNameTheirField() {
        #expect(refused(.getTransactionInfo, GetTransactionInfoRequest(transactionId: "..")) == ["transaction_id"])
        #expect(refused(.getTransactionInfo, GetTransactionInfoRequest()) == ["transaction_id"])
        #expect(
            refused(.getTransactionInfo, GetTransactionInfoRequest(transactionId: "123456789012345678901"))
                == ["transaction_id"])
        #expect(refused(.lookUpOrderId, LookUpOrderIdRequest(orderId: "MT/1")) == ["order_id"])
        #expect(
            refused(
                .getAllSubscriptionStatuses,
                GetAllSubscriptionStatusesRequest(
                    transactionId: "1", status: [.unspecified])) == ["status[0]"])
        #expect(
            refused(
                .getAllSubscriptionStatuses,
                GetAllSubscriptionStatusesRequest(
                    transactionId: "1", status: Array(repeating: .active, count: 101))) == ["status"])
        #expect(
            refused(
                .getRefundHistory,
                GetRefundHistoryRequest(
                    transactionId: "1", revision: String(repeating: "r", count: 1025))) == ["revision"])
        #expect(
            refused(
                .sendConsumptionInformation,
                SendConsumptionInformationRequest(
                    transactionId: "1", customerConsented: true)) == ["delivery_status"])
        #expect(
            refused(
                .sendConsumptionInformation,
                SendConsumptionInformationRequest(
                    transactionId: "1", deliveryStatus: .delivered, consumption: .consumptionPercentage(100_001)))
                == ["consumption_percentage"])
        #expect(
            refused(
                .extendSubscriptionRenewalDate,
                ExtendSubscriptionRenewalDateRequest(
                    transactionId: "1", extendByDays: 0)) == ["extend_by_days"])
        #expect(
            refused(
                .extendSubscriptionRenewalDate,
                ExtendSubscriptionRenewalDateRequest(
                    transactionId: "1", extendByDays: 1, requestIdentifier: String(repeating: "x", count: 129)))
                == ["request_identifier"])
        #expect(
            refused(
                .extendRenewalDatesForAllActiveSubscribers,
                ExtendRenewalDatesForAllActiveSubscribersRequest(
                    extendByDays: 1)) == ["product_id"])
        #expect(
            refused(
                .extendRenewalDatesForAllActiveSubscribers,
                ExtendRenewalDatesForAllActiveSubscribersRequest(
                    extendByDays: 1, storefrontCountryCodes: ["UNITED"], productId: "p")) == [
                    "storefront_country_codes[0]"
                ])
        #expect(
            refused(
                .getStatusOfSubscriptionRenewalDateExtensions, MassStatus(productId: "p", requestIdentifier: ".."))
                == ["request_identifier"])
        #expect(
            refused(
                .getStatusOfSubscriptionRenewalDateExtensions, MassStatus(productId: "a/b", requestIdentifier: "r"))
                == ["product_id"])
        #expect(
            refused(.getTestNotificationStatus, GetTestNotificationStatusRequest(testNotificationToken: "%2e%2e"))
                == ["test_notification_token"])
        #expect(
            refused(.setAppAccountToken, SetAppAccountTokenRequest(transactionId: "1", appAccountToken: "nope"))
                == ["app_account_token"])
    }

    @Test func xcodeEnvironmentIsRefused() {
        #expect(throws: GatewayError.self) {
            try AppleOperation.getTransactionInfo.plan(
                GetTransactionInfoRequest(transactionId: "1", environment: .xcode))
        }
    }

    // MARK: Answers through the shared call path

    private func handler<Request, Response>(
        _ operation: AppleOperation<Request, Response>, _ fixture: UpstreamFixture, _ mint: TransactionMint
    ) -> AppleOperationHandler<Request, Response> {
        AppleOperationHandler(
            operation, client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 10)
    }

    private func renewal(_ mint: TransactionMint, original: String) throws -> String {
        let payload: [String: Any] = [
            "originalTransactionId": original, "autoRenewProductId": "pro.yearly", "productId": "pro.monthly",
            "autoRenewStatus": 1, "signedDate": 1_700_000_000_000, "environment": "Production",
            "recentSubscriptionStartDate": 1_690_000_000_000, "renewalDate": 1_710_000_000_000,
        ]
        let data = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try mint.pki.signer.sign(payload: data)
    }

    @Test func transactionInfoIsVerifiedAndDecoded() async throws {
        let mint = try TransactionMint()
        let jws = try mint.jws("2000000123")
        let fixture = try UpstreamFixture { _, _ in AppleJSON.response(["signedTransactionInfo": jws]) }
        let response = try await handler(.getTransactionInfo, fixture, mint).handle(
            GetTransactionInfoRequest(transactionId: "2000000123"), remaining: .seconds(5))
        #expect(response.signedTransactionInfo == jws)
        #expect(response.transaction?.transactionId == "2000000123" && response.environment == .production)
        #expect(fixture.fake.requests.map(\.path) == ["/production/inApps/v1/transactions/2000000123"])
    }

    @Test func subscriptionStatusesDecodeEveryGroupAndKeepUnknownStatusNumbers() async throws {
        let mint = try TransactionMint()
        let transaction = try mint.jws("2000000500")
        let renewalInfo = try renewal(mint, original: "1000")
        let fixture = try UpstreamFixture { _, _ in
            AppleJSON.response([
                "environment": "Production", "bundleId": "com.example.app", "appAppleId": 1234,
                "data": [
                    [
                        "subscriptionGroupIdentifier": "g1",
                        "lastTransactions": [
                            [
                                "status": 1, "originalTransactionId": "1000", "signedTransactionInfo": transaction,
                                "signedRenewalInfo": renewalInfo,
                            ],
                            ["status": 9, "originalTransactionId": "1001"],
                        ],
                    ]
                ],
            ])
        }
        let response = try await handler(.getAllSubscriptionStatuses, fixture, mint).handle(
            GetAllSubscriptionStatusesRequest(transactionId: "1000", status: [.active]), remaining: .seconds(5))
        #expect(response.appAppleId == 1234 && response.data.count == 1)
        let items = response.data[0].lastTransactions
        #expect(items[0].status == .active && items[0].transaction?.transactionId == "2000000500")
        #expect(items[0].renewalInfo?.autoRenewProductId == "pro.yearly")
        #expect(items[1].status == .unspecified && items[1].statusRaw == 9 && items[1].transaction == nil)
        #expect(fixture.fake.requests.first?.target.hasSuffix("/subscriptions/1000?status=1") == true)
    }

    @Test func aForgedTransactionInAnOrderIsDataLoss() async throws {
        let mint = try TransactionMint()
        let stranger = try TransactionMint()
        let forged = try mint.jws("1", signer: stranger.pki.signer)
        let fixture = try UpstreamFixture { _, _ in AppleJSON.response(["status": 0, "signedTransactions": [forged]]) }
        let lookUp = handler(.lookUpOrderId, fixture, mint)
        let error = await gatewayError { () async throws(GatewayError) in
            try await lookUp.handle(LookUpOrderIdRequest(orderId: "MT1"), remaining: .seconds(5))
        }
        guard case .appleDataRejected(_, _, let problem)? = error else {
            Issue.record("expected DATA_LOSS, got \(String(describing: error))")
            return
        }
        #expect(problem.contains("signed transaction 0 of the order"))
    }

    @Test func refundHistoryFollowsRevisionsWithAllPages() async throws {
        let mint = try TransactionMint()
        let pages = [try mint.jws("r1"), try mint.jws("r2"), try mint.jws("r3")]
        let fixture = try UpstreamFixture { request, number in
            AppleJSON.response([
                "signedTransactions": [pages[(number - 1) % 3]], "revision": "rev\(number)", "hasMore": number < 3,
            ])
        }
        let response = try await handler(.getRefundHistory, fixture, mint).handle(
            GetRefundHistoryRequest(transactionId: "9", allPages: true), remaining: .seconds(5))
        #expect(response.transactions.map(\.transactionId) == ["r1", "r2", "r3"])
        #expect(response.pagesFetched == 3 && !response.hasMore && response.revision == "rev3")
        #expect(
            fixture.fake.requests.map(\.target).map { $0.components(separatedBy: "?").last ?? "" }
                == ["/production/inApps/v2/refund/lookup/9", "revision=rev1", "revision=rev2"])
        let one = try await handler(.getRefundHistory, fixture, mint).handle(
            GetRefundHistoryRequest(transactionId: "9"), remaining: .seconds(5))
        #expect(one.pagesFetched == 1)
    }

    @Test func allPagesStopBeforeTheByteCapAndContinueByRevision() async throws {
        let mint = try TransactionMint()
        let pages = try (1...12).map { try mint.jws("r\($0)") }
        let fixture = try UpstreamFixture { _, number in
            AppleJSON.response([
                "signedTransactions": [pages[(number - 1) % pages.count]], "revision": "rev\(number)",
                "hasMore": true,
            ])
        }
        let oneJWS = pages[0].utf8.count
        let capped = AppleOperationHandler(
            .getRefundHistory, client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 10,
            maxResponseBytes: oneJWS * 5)
        let response = try await capped.handle(
            GetRefundHistoryRequest(transactionId: "9", allPages: true), remaining: .seconds(5))
        #expect(response.hasMore && response.serializedSize() <= oneJWS * 5)
        #expect(response.pagesFetched >= 2 && response.transactions.count == Int(response.pagesFetched))
        #expect(response.revision == "rev\(response.pagesFetched)")
        #expect(fixture.fake.requests.count == Int(response.pagesFetched) + 1)
    }

    @Test func massExtensionStatusAndExtensionAnswersDecode() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { request, _ in
            if request.method == "PUT" {
                return AppleJSON.response([
                    "originalTransactionId": "11", "webOrderLineItemId": "w1", "success": true,
                    "effectiveDate": 1_700_086_400_000 as Int64,
                ])
            }
            return AppleJSON.response([
                "requestIdentifier": "abc", "complete": true, "completeDate": 1_700_000_000_000 as Int64,
                "succeededCount": 30, "failedCount": 2,
            ])
        }
        let extended = try await handler(.extendSubscriptionRenewalDate, fixture, mint).handle(
            ExtendSubscriptionRenewalDateRequest(transactionId: "11", extendByDays: 1, requestIdentifier: "mine"),
            remaining: .seconds(5))
        #expect(extended.success && extended.webOrderLineItemId == "w1" && extended.requestIdentifier == "mine")
        #expect(extended.effectiveDate?.unixMilliseconds == 1_700_086_400_000 && !extended.rawJson.isEmpty)
        let status = try await handler(.getStatusOfSubscriptionRenewalDateExtensions, fixture, mint).handle(
            GetStatusOfSubscriptionRenewalDateExtensionsRequest(productId: "p", requestIdentifier: "abc"),
            remaining: .seconds(5))
        #expect(status.complete && status.succeededCount == 30 && status.failedCount == 2)
        #expect(status.completeDate?.unixMilliseconds == 1_700_000_000_000)
    }

    @Test func hostileAnswersAreDataLossOrDropped() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { request, _ in
            request.path.hasSuffix("/r")
                ? AppleJSON.response(["requestIdentifier": "r", "completeDate": Int64.max, "succeededCount": -1])
                : HTTPResponse(status: 200, headers: [("content-type", "application/json")], body: Array("[1,".utf8))
        }
        let status = try await handler(.getStatusOfSubscriptionRenewalDateExtensions, fixture, mint).handle(
            MassStatus(productId: "p", requestIdentifier: "r"), remaining: .seconds(5))
        #expect(status.completeDate == nil && status.succeededCount == -1)
        let info = handler(.getTransactionInfo, fixture, mint)
        let error = await gatewayError { () async throws(GatewayError) in
            try await info.handle(GetTransactionInfoRequest(transactionId: "1"), remaining: .seconds(5))
        }
        guard case .appleDataRejected? = error else {
            Issue.record("expected DATA_LOSS, got \(String(describing: error))")
            return
        }
    }

    @Test func anExtensionIsNotRepeatedAfterAnAmbiguousFailureButAFinishIs() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in HTTPResponse(status: 502) }
        let extend = handler(.extendSubscriptionRenewalDate, fixture, mint)
        let extendError = await gatewayError { () async throws(GatewayError) in
            try await extend.handle(
                ExtendSubscriptionRenewalDateRequest(transactionId: "11", extendByDays: 1), remaining: .seconds(5))
        }
        #expect(extendError != nil)
        #expect(fixture.fake.requests.count == 1)
        let finish = handler(.finishTransaction, fixture, mint)
        _ = await gatewayError { () async throws(GatewayError) in
            try await finish.handle(FinishTransactionRequest(transactionId: "11"), remaining: .seconds(5))
        }
        #expect(fixture.fake.requests.count == 1 + fixture.configuration.retries.maxAttempts)
    }

    @Test func anExtensionIsRepeatedWhenApplesCodeSaysItMayBe() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, number in
            number == 1
                ? AppleJSON.error(5_000_001, status: 500)
                : AppleJSON.response(["originalTransactionId": "11", "success": true])
        }
        let response = try await handler(.extendSubscriptionRenewalDate, fixture, mint).handle(
            ExtendSubscriptionRenewalDateRequest(transactionId: "11", extendByDays: 1, requestIdentifier: "same"),
            remaining: .seconds(5))
        #expect(response.success)
        let bodies = fixture.fake.requests.map { text($0.body) }
        #expect(bodies.count == 2 && bodies[0] == bodies[1])
    }

    @Test func autoTriesSandboxWhenProductionDoesNotKnowTheOriginalTransaction() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture(apps: [
            UpstreamFixture.app(
                "example", bundleId: "com.example.app",
                environment: .auto)
        ]) { request, _ in
            request.path.hasPrefix("/production")
                ? AppleJSON.error(4_040_005, status: 404)
                : AppleJSON.response(["originalTransactionId": "11", "success": true])
        }
        let response = try await handler(.extendSubscriptionRenewalDate, fixture, mint).handle(
            ExtendSubscriptionRenewalDateRequest(transactionId: "11", extendByDays: 1), remaining: .seconds(5))
        #expect(response.environment == .sandbox && response.success)
        #expect(fixture.fake.requests.map { $0.path.hasPrefix("/sandbox") } == [false, true])
    }

    @Test func identicalReadsInFlightShareOneCall() async throws {
        let mint = try TransactionMint()
        let jws = try mint.jws("42")
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(300))
            return AppleJSON.response(["signedTransactionInfo": jws])
        }
        let shared = handler(.getTransactionInfo, fixture, mint)
        async let first = shared.handle(GetTransactionInfoRequest(transactionId: "42"), remaining: .seconds(5))
        async let second = shared.handle(GetTransactionInfoRequest(transactionId: "42"), remaining: .seconds(5))
        let (a, b) = try await (first, second)
        #expect(a == b && fixture.fake.requests.count == 1)
    }

    @Test func writesAreNeverCoalesced() async throws {
        let mint = try TransactionMint()
        let fixture = try UpstreamFixture { _, _ in
            try? await Task.sleep(for: .milliseconds(200))
            return HTTPResponse(status: 200)
        }
        let finish = handler(.finishTransaction, fixture, mint)
        async let first = finish.handle(FinishTransactionRequest(transactionId: "42"), remaining: .seconds(5))
        async let second = finish.handle(FinishTransactionRequest(transactionId: "42"), remaining: .seconds(5))
        _ = try await (first, second)
        #expect(fixture.fake.requests.count == 2)
    }

    // MARK: Offer signatures

    @Test func promotionalOfferSignatureVerifiesWithTheAppsPublicKey() throws {
        let fixture = try UpstreamFixture()
        let signing = OfferSigningHandler(client: fixture.client)
        let response = try signing.promotionalOffer(
            CreatePromotionalOfferSignatureRequest(
                productId: "pro.monthly", offerId: "OFFER", applicationUsername: "ABC",
                nonce: "7E3FB20B-4CDB-47CC-936D-99D65F608138", timestamp: 1_700_000_000_000))
        let app = try fixture.app()
        let message = [
            app.bundleId, app.keyId, "pro.monthly", "OFFER", "abc", "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            "1700000000000",
        ].joined(separator: "\u{2063}")
        let der = try #require(Data(base64Encoded: response.signature))
        let raw = try #require(ECDSA.rawSignature(fromDER: [UInt8](der), coordinateByteCount: 32))
        let key = try #require(fixture.keys[app.bundleId])
        #expect(try key.publicKey.isValidSignature(raw, for: Array(message.utf8)))
        #expect(response.keyId == app.keyId && response.nonce == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
    }

    @Test func storeKitJWSCarriesApplesClaimsAndVerifies() throws {
        let fixture = try UpstreamFixture()
        let signing = OfferSigningHandler(client: fixture.client)
        let response = try signing.introductoryOfferEligibility(
            CreateIntroductoryOfferEligibilitySignatureRequest(
                productId: "pro.monthly", allowIntroductoryOffer: true, transactionId: "2000000123"))
        let parts = response.jws.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let payload = try #require(Base64URL.decode(parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        let app = try fixture.app()
        #expect(claims["aud"] as? String == "introductory-offer-eligibility")
        #expect(claims["bid"] as? String == app.bundleId && claims["iss"] as? String == app.issuerId)
        #expect(claims["allowIntroductoryOffer"] as? Bool == true && claims["transactionId"] as? String == "2000000123")
        #expect(claims["nonce"] as? String == response.nonce)
        let key = try #require(fixture.keys[app.bundleId])
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(try key.publicKey.isValidSignature(Array(signature), for: Array((parts[0] + "." + parts[1]).utf8)))
    }

    private func text(_ bytes: [UInt8]?) -> String { String(decoding: bytes ?? [], as: UTF8.self) }
}
