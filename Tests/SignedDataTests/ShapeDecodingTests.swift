import Cryptography
import Foundation
import ProtoCodec
import Testing

@testable import SignedData

/// Every string enum reaches callers as `<field>_raw` too (known, unknown and absent values), optional booleans
/// keep "absent" apart from false, and the shapes Apple added recently decode typed.
@Suite struct ShapeDecodingTests {
    private func transaction(_ fields: [String: Any]) throws -> Transaction {
        try #require(PayloadDecoder.transaction(fromJSON: json(["transactionId": "1"].merging(fields) { $1 })))
    }

    private func renewal(_ fields: [String: Any]) throws -> RenewalInfo {
        try #require(PayloadDecoder.renewalInfo(fromJSON: json(["autoRenewStatus": 1].merging(fields) { $1 })))
    }

    private func notification(_ fields: [String: Any]) throws -> AppStoreNotification {
        try #require(PayloadDecoder.notification(fromJSON: json(["notificationType": "TEST"].merging(fields) { $1 })))
    }

    @Test func everyTransactionStringEnumKeepsItsRawValue() throws {
        let known = try transaction([
            "type": "Non-Consumable", "inAppOwnershipType": "FAMILY_SHARED", "environment": "Sandbox",
            "transactionReason": "RENEWAL", "offerDiscountType": "ONE_TIME", "revocationType": "REFUND_PRORATED",
            "billingPlanType": "MONTHLY",
        ])
        #expect((known.type, known.typeRaw) == (.nonConsumable, "Non-Consumable"))
        #expect((known.inAppOwnershipType, known.inAppOwnershipTypeRaw) == (.familyShared, "FAMILY_SHARED"))
        #expect((known.environment, known.environmentRaw) == (.sandbox, "Sandbox"))
        #expect((known.transactionReason, known.transactionReasonRaw) == (.renewal, "RENEWAL"))
        #expect((known.offerDiscountType, known.offerDiscountTypeRaw) == (.oneTime, "ONE_TIME"))
        #expect((known.revocationType, known.revocationTypeRaw) == (.refundProrated, "REFUND_PRORATED"))
        #expect((known.billingPlanType, known.billingPlanTypeRaw) == (.monthly, "MONTHLY"))

        let future = try transaction([
            "type": "Bundle", "inAppOwnershipType": "GIFTED", "environment": "Staging", "transactionReason": "GIFT",
            "offerDiscountType": "PAY_LATER", "revocationType": "CHARGEBACK", "billingPlanType": "QUARTERLY",
        ])
        #expect((future.type, future.typeRaw) == (.unspecified, "Bundle"))
        #expect((future.inAppOwnershipType, future.inAppOwnershipTypeRaw) == (.unspecified, "GIFTED"))
        #expect((future.environment, future.environmentRaw) == (.unspecified, "Staging"))
        #expect((future.transactionReason, future.transactionReasonRaw) == (.unspecified, "GIFT"))
        #expect((future.offerDiscountType, future.offerDiscountTypeRaw) == (.unspecified, "PAY_LATER"))
        #expect((future.revocationType, future.revocationTypeRaw) == (.unspecified, "CHARGEBACK"))
        #expect((future.billingPlanType, future.billingPlanTypeRaw) == (.unspecified, "QUARTERLY"))

        let absent = try transaction(["type": 7])  // mistyped reads as absent
        #expect(absent.typeRaw.isEmpty && absent.environmentRaw.isEmpty && absent.billingPlanTypeRaw.isEmpty)
        // The wire form keeps them too.
        let decoded = try Transaction(serializedBytes: future.serializedBytes())
        #expect(decoded.typeRaw == "Bundle" && decoded.billingPlanTypeRaw == "QUARTERLY")
    }

    @Test func renewalAppTransactionAndNotificationEnumsKeepTheirRawValues() throws {
        let r = try renewal([
            "environment": "Xcode", "offerDiscountType": "FREE_TRIAL", "renewalBillingPlanType": "BIENNIAL",
            "commitmentInfo": ["commitmentRenewalBillingPlanType": "BILLED_UPFRONT"],
        ])
        #expect((r.environment, r.environmentRaw) == (.xcode, "Xcode"))
        #expect((r.offerDiscountType, r.offerDiscountTypeRaw) == (.freeTrial, "FREE_TRIAL"))
        #expect((r.renewalBillingPlanType, r.renewalBillingPlanTypeRaw) == (.unspecified, "BIENNIAL"))
        #expect(r.commitmentInfo?.commitmentRenewalBillingPlanType == .billedUpfront)
        #expect(r.commitmentInfo?.commitmentRenewalBillingPlanTypeRaw == "BILLED_UPFRONT")

        let app = try #require(
            PayloadDecoder.appTransaction(
                fromJSON: json([
                    "receiptType": "LocalTesting", "originalPlatform": "watchOS",
                ])))
        #expect((app.receiptType, app.receiptTypeRaw) == (.localTesting, "LocalTesting"))
        #expect((app.originalPlatform, app.originalPlatformRaw) == (.unspecified, "watchOS"))

        let n = try notification([
            "data": ["environment": "Production", "consumptionRequestReason": "CHANGED_MIND"],
            "summary": ["environment": "Sandbox"], "appData": ["environment": "Moon"],
        ])
        #expect((n.data?.environment, n.data?.environmentRaw) == (.production, "Production"))
        #expect(n.data?.consumptionRequestReason == .unspecified)
        #expect(n.data?.consumptionRequestReasonRaw == "CHANGED_MIND")
        #expect((n.summary?.environment, n.summary?.environmentRaw) == (.sandbox, "Sandbox"))
        #expect((n.appData?.environment, n.appData?.environmentRaw) == (.unspecified, "Moon"))
    }

    @Test func optionalBooleansKeepAbsentApartFromFalse() throws {
        let absent = try transaction([:])
        #expect(absent.isUpgradedValue == nil && absent.isUpgraded == false)
        let no = try transaction(["isUpgraded": false])
        #expect(no.isUpgradedValue?.value == false && no.isUpgraded == false)
        let yes = try transaction(["isUpgraded": true])
        #expect(yes.isUpgradedValue?.value == true && yes.isUpgraded == true)
        let mistyped = try transaction(["isUpgraded": "true"])
        #expect(mistyped.isUpgradedValue == nil)

        #expect(try renewal([:]).isInBillingRetryPeriodValue == nil)
        #expect(try renewal(["isInBillingRetryPeriod": false]).isInBillingRetryPeriodValue?.value == false)
        #expect(try renewal(["isInBillingRetryPeriod": true]).isInBillingRetryPeriodValue?.value == true)
        // Presence survives the wire: a set false is not an unset field.
        let wire = try Transaction(serializedBytes: no.serializedBytes())
        #expect(wire.isUpgradedValue?.value == false)
        #expect(try Transaction(serializedBytes: absent.serializedBytes()).isUpgradedValue == nil)
    }

    @Test func externalPurchaseTokenTypeAndExpiry() throws {
        let n = try notification([
            "notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "ACTIVE_TOKEN_REMINDER",
            "externalPurchaseToken": [
                "externalPurchaseId": "b2158121", "tokenCreationDate": 1_698_148_950_000, "appAppleId": 55555,
                "bundleId": "com.example", "tokenType": "SERVICES", "tokenExpirationDate": 1_700_000_000_000,
            ],
        ])
        let token = try #require(n.externalPurchaseToken)
        #expect(token.tokenType == "SERVICES")
        #expect(token.tokenExpirationDate?.unixMilliseconds == 1_700_000_000_000)
        #expect(n.subtype == .activeTokenReminder)
    }

    @Test func advancedCommerceInfoIsTyped() throws {
        let t = try transaction([
            "advancedCommerceInfo": [
                "descriptors": ["description": "Gold", "displayName": "Gold plan"], "estimatedTax": 120,
                "period": "P1M", "requestReferenceId": "ref-1", "taxCode": "C003-00-1", "taxExclusivePrice": 9990,
                "taxRate": "0.0725",
                "items": [
                    [
                        "SKU": "gold.monthly", "description": "Gold", "displayName": "Gold", "price": 9990,
                        "revocationDate": 1_700_000_000_000,
                        "offer": ["period": "P1W", "periodCount": 2, "price": 0, "reason": "ACQUISITION"],
                        "refunds": [
                            [
                                "refundAmount": 500, "refundDate": 1_700_000_100_000, "refundReason": "LEGAL",
                                "refundType": "CUSTOM",
                            ]
                        ],
                    ], "not an object",
                ],
            ]
        ])
        let info = try #require(t.advancedCommerceInfo)
        #expect(info.descriptors?.displayName == "Gold plan" && info.estimatedTaxMilliunits == 120)
        #expect(info.period == "P1M" && info.taxRate == "0.0725" && info.taxExclusivePriceMilliunits == 9990)
        #expect(info.items.count == 1)
        let item = try #require(info.items.first)
        #expect(item.sku == "gold.monthly" && item.priceMilliunits == 9990)
        #expect(item.offer?.reason == "ACQUISITION" && item.offer?.periodCount == 2)
        #expect(item.refunds.first?.refundType == "CUSTOM" && item.refunds.first?.refundAmountMilliunits == 500)
        #expect(item.revocationDate?.unixMilliseconds == 1_700_000_000_000)
        #expect(!t.advancedCommerceInfoJson.isEmpty)

        let r = try renewal([
            "advancedCommerceInfo": [
                "consistencyToken": "tok", "period": "P1Y",
                "items": [
                    ["SKU": "a", "priceIncreaseInfo": ["dependentSKUs": ["b"], "price": 12, "status": "SCHEDULED"]]
                ],
            ]
        ])
        #expect(r.advancedCommerceInfo?.consistencyToken == "tok")
        #expect(r.advancedCommerceInfo?.items.first?.priceIncreaseInfo?.status == "SCHEDULED")
        #expect(r.advancedCommerceInfo?.items.first?.priceIncreaseInfo?.dependentSkus == ["b"])
        #expect(try transaction([:]).advancedCommerceInfo == nil)
    }

    @Test func realtimeRequestIsAKindOfItsOwn() throws {
        let pki = try AppStoreTestPKI(referenceTime: referenceTime)
        let verifier = try SignedDataVerifier(
            configuration: .init(trustedRoots: [pki.root.certificate]), clock: ManualClock(referenceTime))
        let body = json([
            "originalTransactionId": "42", "appAppleId": 1234, "productId": "pro", "userLocale": "en-US",
            "requestIdentifier": "5f2b1a3c-0000-4000-8000-000000000000", "signedDate": referenceMilliseconds,
            "environment": "Production",
        ])
        let jws = try pki.signer.sign(payload: body)
        let bound = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: 1234, environment: .production)
        let result = verifier.verify(jws, kind: .realtimeRequest, requirements: bound)
        #expect(result.status == .ok, "\(result.message)")
        guard case .realtimeRequest(let request)? = PayloadDecoder.decode(result) else {
            Issue.record("expected a realtime request")
            return
        }
        #expect(request.userLocale == "en-US" && request.appAppleId == 1234 && request.environmentRaw == "Production")
        let otherApp = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: 99, environment: .production)
        #expect(verifier.verify(jws, requirements: otherApp).status == .invalidAppIdentifier)
        #expect(verifier.verify(jws, kind: .transaction).status == .wrongKind)
    }
}

/// Xcode and LocalTesting data: decoded without a signature check only when the requirements allow it.
@Suite struct UnverifiedByDesignTests {
    static func xcodeJWS(_ payload: Data, signature: [UInt8] = Array(repeating: 7, count: 64)) -> String {
        let header = #"{"alg":"ES256","x5c":["eGNvZGU="],"kid":"Apple_Xcode_Key"}"#
        return [Data(header.utf8), payload, Data(signature)]
            .map {
                $0.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            .joined(separator: ".")
    }

    let verifier: SignedDataVerifier
    init() throws {
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [Fixture.appleRoot()]))
    }

    private func xcodeApp() throws -> VerificationRequirements {
        try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.xcode, .localTesting]
        )
        .acceptingUnverified([.xcode, .localTesting])
    }

    @Test func acceptedOnlyWhereAllowed() throws {
        let jws = Self.xcodeJWS(transactionPayload(environment: "Xcode"))
        let result = verifier.verify(jws, requirements: try xcodeApp())
        #expect(result.status == .unverifiedByDesign && result.environment == .xcode)
        guard case .transaction(let t)? = PayloadDecoder.decode(result) else {
            Issue.record("expected the transaction decoded")
            return
        }
        #expect(t.environmentRaw == "Xcode")
        // Any other requirements: the signature must be Apple's, and it is not.
        let sandbox = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.sandbox, .xcode])
        #expect(![.ok, .unverifiedByDesign].contains(verifier.verify(jws, requirements: sandbox).status))
        #expect(![.ok, .unverifiedByDesign].contains(verifier.verify(jws).status))
        #expect(PayloadDecoder.decode(verifier.verify(jws)) == nil)
    }

    @Test func onlyXcodeAndLocalTestingCanBeUnverified() throws {
        let requirements = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: nil
        )
        .acceptingUnverified([.sandbox, .production, .xcode])
        #expect(requirements.unverifiedEnvironments == [.xcode])
        let sandbox = Self.xcodeJWS(transactionPayload(environment: "Sandbox"))
        #expect(verifier.verify(sandbox, requirements: requirements).status != .unverifiedByDesign)
    }

    @Test func bindingStillApplies() throws {
        let otherBundle = Self.xcodeJWS(transactionPayload(bundleID: "com.example.other", environment: "Xcode"))
        #expect(verifier.verify(otherBundle, requirements: try xcodeApp()).status == .invalidAppIdentifier)
        let malformed = "a.%%%.b"
        #expect(verifier.verify(malformed, requirements: try xcodeApp()).status == .malformed)
        let tooLong = Self.xcodeJWS(Data(repeating: 0x20, count: 70_000))
        #expect(verifier.verify(tooLong, requirements: try xcodeApp()).status == .malformed)
    }

    @Test func nestedXcodeNotification() throws {
        let nested = Self.xcodeJWS(transactionPayload(environment: "Xcode"))
        let notification = json([
            "notificationType": "ONE_TIME_CHARGE", "notificationUUID": "u", "signedDate": referenceMilliseconds,
            "data": ["bundleId": "com.example.app", "environment": "Xcode", "signedTransactionInfo": nested],
        ])
        let result = verifier.verify(Self.xcodeJWS(notification), requirements: try xcodeApp())
        #expect(result.status == .unverifiedByDesign)
        guard case .notification(let n)? = PayloadDecoder.decode(result) else {
            Issue.record("expected a notification")
            return
        }
        #expect(n.data?.transaction?.transactionId == "1000")
        // A nested payload claiming another environment is refused.
        let mixed = json([
            "notificationType": "ONE_TIME_CHARGE", "signedDate": referenceMilliseconds,
            "data": [
                "bundleId": "com.example.app", "environment": "Xcode",
                "signedTransactionInfo": Self.xcodeJWS(transactionPayload(environment: "Production")),
            ],
        ])
        #expect(verifier.verify(Self.xcodeJWS(mixed), requirements: try xcodeApp()).status == .invalidEnvironment)
    }
}
