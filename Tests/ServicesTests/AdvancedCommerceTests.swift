import AppStoreClient
import AppStoreDomain
import AppleFixtures
import Cryptography
import Foundation
import GatewayFoundation
import HTTPServer
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// The Advanced Commerce API (issue 33): the in-app signature (header, claims, the `request` claim's JSON, the
/// app's key), Apple's paths and bodies, idempotent retries through the request reference id, and the contract.
@Suite(.serialized) struct AdvancedCommerceTests {
    private let reference = "550E8400-E29B-41D4-A716-446655440000"

    // MARK: In-app signature

    @Test func inAppSignatureCarriesApplesClaimsAndVerifiesWithTheAppsKey() throws {
        let fixture = try UpstreamFixture()
        let charge = AdvancedCommerceOneTimeChargeCreate(
            requestInfo: AdvancedCommerceRequestInfo(requestReferenceId: reference), currency: "USD",
            item: AdvancedCommerceOneTimeChargeItem(
                sku: "book", description: "A book", displayName: "Book", price: 9990),
            taxCode: "C003-00-2", storefront: "USA")
        let response = try InAppSignatureHandler(client: fixture.client).sign(
            CreateInAppSignatureRequest(request: .oneTimeCharge(charge)))
        let parts = response.jws.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let app = try fixture.app()
        let header = try #require(Base64URL.decode(parts[0]))
        #expect(String(decoding: header, as: UTF8.self) == AppStoreJWT.header(keyID: app.keyId))
        let payload = try #require(Base64URL.decode(parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(Set(claims.keys) == ["iss", "bid", "aud", "iat", "nonce", "request"])
        #expect(claims["aud"] as? String == "advanced-commerce-api")
        #expect(claims["bid"] as? String == app.bundleId && claims["iss"] as? String == app.issuerId)
        #expect(claims["nonce"] as? String == response.nonce && claims["iat"] as? Int64 == response.issuedAt)
        // `request` is standard, padded base64 of the JSON, as Apple's creator encodes it.
        let encoded = try #require(claims["request"] as? String)
        let request = try #require(Data(base64Encoded: encoded))
        #expect(
            String(decoding: request, as: UTF8.self)
                == #"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","requestInfo":{"requestReferenceId":"#
                + #""550e8400-e29b-41d4-a716-446655440000"},"currency":"USD","item":{"SKU":"book","#
                + #""description":"A book","displayName":"Book","price":9990},"taxCode":"C003-00-2","#
                + #""storefront":"USA"}"#)
        let key = try #require(fixture.keys[app.bundleId])
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(try key.publicKey.isValidSignature(Array(signature), for: Array((parts[0] + "." + parts[1]).utf8)))
    }

    @Test func everyInAppKindHasApplesOperationAndMembers() throws {
        let info = AdvancedCommerceRequestInfo(
            requestReferenceId: reference, appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            consistencyToken: "ct")
        let modify = AdvancedCommerceSubscriptionModify(
            requestInfo: info, transactionId: "2000000000000002", retainBillingCycle: false,
            changeItems: [
                AdvancedCommerceModifyChangeItem(
                    currentSku: "a", sku: "b", description: "d", displayName: "n", price: 10, reason: "DOWNGRADE",
                    effective: "NEXT_BILL_CYCLE", proratedPrice: ProtoInt64Value(value: 0))
            ], removeSkus: ["c"], periodChange: AdvancedCommercePeriodChange(effective: "IMMEDIATELY", period: "P1Y"))
        let json = try InAppSignatureHandler.requestJSON(
            CreateInAppSignatureRequest(request: .modifySubscription(modify)))
        #expect(
            json.encoded
                == #"{"operation":"MODIFY_SUBSCRIPTION","version":"1","requestInfo":{"requestReferenceId":"#
                + #""550e8400-e29b-41d4-a716-446655440000","appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","#
                + #""consistencyToken":"ct"},"transactionId":"2000000000000002","retainBillingCycle":false,"#
                + #""changeItems":[{"currentSKU":"a","SKU":"b","description":"d","displayName":"n","price":10,"#
                + #""reason":"DOWNGRADE","effective":"NEXT_BILL_CYCLE","proratedPrice":0}],"#
                + #""removeItems":[{"SKU":"c"}],"periodChange":{"effective":"IMMEDIATELY","period":"P1Y"}}"#)
        let reactivate = try InAppSignatureHandler.requestJSON(
            CreateInAppSignatureRequest(
                request: .reactivateSubscription(
                    AdvancedCommerceSubscriptionReactivate(requestInfo: info, transactionId: "7"))))
        #expect(reactivate.encoded.hasPrefix(#"{"operation":"REACTIVATE_SUBSCRIPTION","version":"1","#))
        let create = try InAppSignatureHandler.requestJSON(
            CreateInAppSignatureRequest(
                request: .createSubscription(
                    AdvancedCommerceSubscriptionCreate(
                        requestInfo: info, currency: "EUR",
                        descriptors: AdvancedCommerceDescriptors(description: "d", displayName: "n"),
                        items: [
                            AdvancedCommerceSubscriptionItem(
                                sku: "s", description: "d", displayName: "n", price: 1,
                                offer: AdvancedCommerceOffer(
                                    period: "P3D", periodCount: 1, priceMilliunits: 0, reason: "ACQUISITION"))
                        ], period: "P1M", taxCode: "t"))))
        #expect(create.encoded.contains(#""offer":{"period":"P3D","periodCount":1,"price":0,"reason":"ACQUISITION"}"#))
    }

    @Test func hostileInAppRequestsAreRefusedWithEveryField() throws {
        let charge = AdvancedCommerceOneTimeChargeCreate(
            requestInfo: AdvancedCommerceRequestInfo(
                requestReferenceId: "x", consistencyToken: String(repeating: "t", count: 5000)),
            currency: "US",
            item: AdvancedCommerceOneTimeChargeItem(
                sku: String(repeating: "é", count: 129), description: String(repeating: "d", count: 46),
                displayName: "", price: -1),
            taxCode: "", storefront: "usa")
        let error = #expect(throws: GatewayError.self) {
            try InAppSignatureHandler.requestJSON(CreateInAppSignatureRequest(request: .oneTimeCharge(charge)))
        }
        guard case .badRequest(let fields)? = error else {
            Issue.record("expected a bad request, got \(String(describing: error))")
            return
        }
        #expect(
            Set(fields.map(\.field)) == [
                "one_time_charge.request_info.request_reference_id", "one_time_charge.request_info.consistency_token",
                "one_time_charge.currency", "one_time_charge.item.sku", "one_time_charge.item.description",
                "one_time_charge.item.display_name", "one_time_charge.item.price", "one_time_charge.tax_code",
                "one_time_charge.storefront",
            ])
        #expect(throws: GatewayError.self) { try InAppSignatureHandler.requestJSON(CreateInAppSignatureRequest()) }
        let tooMany = AdvancedCommerceSubscriptionReactivate(
            requestInfo: AdvancedCommerceRequestInfo(requestReferenceId: reference), transactionId: "1",
            skus: Array(repeating: "s", count: 101))
        #expect(throws: GatewayError.self) {
            try InAppSignatureHandler.requestJSON(
                CreateInAppSignatureRequest(request: .reactivateSubscription(tooMany)))
        }
    }

    // MARK: Server endpoints

    @Test func everyWriteGoesToApplesPathWithItsBody() throws {
        let info = AdvancedCommerceRequestInfo(requestReferenceId: reference)
        let cases: [(AppleRequest, String, String)] = [
            (
                try AppleOperation<CancelSubscriptionRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .cancelSubscription
                ).plan(CancelSubscriptionRequest(transactionId: "11", requestInfo: info)),
                "/advancedCommerce/v1/subscription/cancel/11", "{\(referenceJSON)}"
            ),
            (
                try AppleOperation<RevokeSubscriptionRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .revokeSubscription
                ).plan(
                    RevokeSubscriptionRequest(
                        transactionId: "12", requestInfo: info, refundType: "FULL", refundReason: "LEGAL")),
                "/advancedCommerce/v1/subscription/revoke/12",
                "{\(referenceJSON),\"refundRiskingPreference\":false,\"refundType\":\"FULL\",\"refundReason\":\"LEGAL\"}"
            ),
            (
                try AppleOperation<ChangeSubscriptionPriceRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .changeSubscriptionPrice
                ).plan(
                    ChangeSubscriptionPriceRequest(
                        transactionId: "13", requestInfo: info,
                        items: [AdvancedCommercePriceChangeItem(sku: "s", price: 5)])),
                "/advancedCommerce/v1/subscription/changePrice/13",
                "{\(referenceJSON),\"items\":[{\"SKU\":\"s\",\"price\":5}]}"
            ),
            (
                try AppleOperation<ChangeSubscriptionMetadataRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .changeSubscriptionMetadata
                ).plan(
                    ChangeSubscriptionMetadataRequest(
                        transactionId: "14", requestInfo: info,
                        descriptors: AdvancedCommerceDescriptorsChange(effective: "IMMEDIATELY", description: "d"))),
                "/advancedCommerce/v1/subscription/changeMetadata/14",
                "{\(referenceJSON),\"descriptors\":{\"effective\":\"IMMEDIATELY\",\"description\":\"d\"}}"
            ),
            (
                try AppleOperation<MigrateSubscriptionRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .migrateSubscription
                ).plan(
                    MigrateSubscriptionRequest(
                        transactionId: "15", requestInfo: info,
                        descriptors: AdvancedCommerceDescriptors(description: "d", displayName: "n"),
                        items: [AdvancedCommerceItem(sku: "s", description: "d", displayName: "n")],
                        targetProductId: "generic", taxCode: "t")),
                "/advancedCommerce/v1/subscription/migrate/15",
                "{\(referenceJSON),\"descriptors\":{\"description\":\"d\",\"displayName\":\"n\"},"
                    + "\"items\":[{\"SKU\":\"s\",\"description\":\"d\",\"displayName\":\"n\"}],"
                    + "\"targetProductId\":\"generic\",\"taxCode\":\"t\"}"
            ),
            (
                try AppleOperation<RequestRefundRequest, AdvancedCommerceResponse>.advancedCommerce(
                    .requestTransactionRefund
                ).plan(
                    RequestRefundRequest(
                        transactionId: "16", requestInfo: info,
                        items: [
                            AdvancedCommerceRefundItem(
                                sku: "s", refundReason: "OTHER", refundType: "CUSTOM", revoke: false,
                                refundAmount: ProtoInt64Value(value: 100))
                        ], refundRiskingPreference: true)),
                "/advancedCommerce/v1/transaction/requestRefund/16",
                "{\(referenceJSON),\"items\":[{\"SKU\":\"s\",\"refundReason\":\"OTHER\",\"refundType\":\"CUSTOM\","
                    + "\"revoke\":false,\"refundAmount\":100}],\"refundRiskingPreference\":true}"
            ),
        ]
        for (request, path, body) in cases {
            #expect(request.endpoint.method == .post && request.endpoint.isIdempotent && !request.endpoint.isRead)
            #expect(request.endpoint.path(values: request.pathValues) == path)
            #expect(String(decoding: request.body ?? [], as: UTF8.self) == body)
        }
    }

    @Test func aMissingReferenceIsGeneratedOnceAndEveryRetryResendsIt() async throws {
        let mint = try TransactionMint()
        let jws = try mint.jws("11")
        let fixture = try UpstreamFixture { _, number in
            number == 1
                ? HTTPResponse(status: 502)
                : AppleJSON.response(["signedTransactionInfo": jws])
        }
        let handler = AppleOperationHandler(
            AppleOperation<RequestRefundRequest, AdvancedCommerceResponse>.advancedCommerce(.requestTransactionRefund),
            client: fixture.client, verifier: mint.verifier, clock: SystemClock(), maxPages: 1)
        let response = try await handler.handle(
            RequestRefundRequest(
                transactionId: "11",
                items: [AdvancedCommerceRefundItem(sku: "s", refundReason: "LEGAL", refundType: "FULL")]),
            remaining: .seconds(5))
        #expect(UUID(uuidString: response.requestReferenceId) != nil)
        #expect(response.requestReferenceId == response.requestReferenceId.lowercased())
        #expect(response.transaction?.transactionId == "11" && response.renewalInfo == nil)
        let bodies = fixture.fake.requests.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(bodies.count == 2 && bodies[0] == bodies[1])
        #expect(bodies[0].contains(#""requestReferenceId":"\#(response.requestReferenceId)""#))
    }

    @Test func hostileWritesAreRefusedBeforeApple() throws {
        let operation = AppleOperation<RevokeSubscriptionRequest, AdvancedCommerceResponse>.advancedCommerce(
            .revokeSubscription)
        let error = #expect(throws: GatewayError.self) {
            try operation.plan(
                RevokeSubscriptionRequest(
                    transactionId: "1/../2",
                    requestInfo: AdvancedCommerceRequestInfo(requestReferenceId: "nope", appAccountToken: "nope"),
                    refundType: "CUSTOM", refundReason: "", storefront: "U"))
        }
        guard case .badRequest(let fields)? = error else {
            Issue.record("expected a bad request, got \(String(describing: error))")
            return
        }
        #expect(
            Set(fields.map(\.field)) == [
                "transaction_id", "request_info.request_reference_id", "request_info.app_account_token",
                "refund_type", "refund_reason", "storefront",
            ])
        let metadata = AppleOperation<ChangeSubscriptionMetadataRequest, AdvancedCommerceResponse>.advancedCommerce(
            .changeSubscriptionMetadata)
        #expect(throws: GatewayError.self) { try metadata.plan(ChangeSubscriptionMetadataRequest(transactionId: "1")) }
    }

    private var referenceJSON: String {
        #""requestInfo":{"requestReferenceId":"550e8400-e29b-41d4-a716-446655440000"}"#
    }
}
