import Cryptography
import Foundation
import ProtoCodec
import Testing

@testable import SignedData

@Suite struct PayloadDecoderTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [Fixture.appleRoot()]))
    }

    private func timestamp(_ milliseconds: Int64) -> ProtoTimestamp {
        ProtoTimestamp(seconds: milliseconds / 1000, nanos: Int32(milliseconds % 1000) * 1_000_000)
    }

    @Test func genuineRefundedTransaction() throws {
        let result = verifier.verify(try Fixture.jws("transaction-Sandbox-3"))
        guard case .transaction(let t)? = PayloadDecoder.decode(result) else {
            Issue.record("expected a transaction: \(result.message)")
            return
        }
        #expect(t.transactionId == "2000001032604840")
        #expect(t.originalTransactionId == "2000001024993299")
        #expect(t.webOrderLineItemId == "2000000114930653")
        #expect(t.bundleId == "com.loki-project.loki-messenger")
        #expect(t.subscriptionGroupIdentifier == "21752814")
        #expect(t.purchaseDate == timestamp(1_760_335_129_000))
        #expect(t.expiresDate == timestamp(1_760_335_309_000))
        #expect(t.signedDate == timestamp(1_760_592_122_788))
        #expect(t.quantity == 1)
        #expect(t.type == .autoRenewable)
        #expect(t.inAppOwnershipType == .purchased)
        #expect(t.revocationReason == .other)  // Apple's 0
        #expect(t.revocationDate == timestamp(1_760_591_999_000))
        #expect(t.environment == .sandbox)
        #expect(t.transactionReason == .purchase)
        #expect(t.storefront == "AUS")
        #expect(t.storefrontId == "143460")
        #expect(t.priceMilliunits == 1990)
        #expect(t.currency == "AUD")
        #expect(t.appTransactionId == "704897469903383919")
        #expect(t.offerType == .unspecified)
        #expect(t.rawJson == String(decoding: try #require(result.rawJSON), as: UTF8.self))
    }

    @Test func genuineRenewalInfo() throws {
        guard case .renewalInfo(let r)? = PayloadDecoder.decode(verifier.verify(try Fixture.jws("renewal-Sandbox-2")))
        else {
            Issue.record("expected renewal info")
            return
        }
        #expect(r.autoRenewStatus == .on)
        #expect(r.autoRenewProductId == "com.getsession.org.pro_sub")
        #expect(r.renewalPriceMilliunits == 1990)
        #expect(r.renewalDate == timestamp(1_759_302_732_000))
        #expect(r.recentSubscriptionStartDate == timestamp(1_759_301_832_000))
        #expect(r.environment == .sandbox)
        guard case .renewalInfo(let off)? = PayloadDecoder.decode(verifier.verify(try Fixture.jws("renewal-Sandbox-3")))
        else {
            Issue.record("expected renewal info")
            return
        }
        #expect(off.autoRenewStatus == .off)  // Apple's 0
    }

    @Test func genuineNotificationWithNestedPayloads() throws {
        let result = verifier.verify(try Fixture.jws("notification-Sandbox-4"))
        guard case .notification(let n)? = PayloadDecoder.decode(result) else {
            Issue.record("expected a notification")
            return
        }
        #expect(n.notificationType == .didRenew)
        #expect(n.notificationTypeRaw == "DID_RENEW")
        #expect(n.signedDate == timestamp(1_759_302_518_835))
        #expect(n.data?.bundleId == "com.loki-project.loki-messenger")
        #expect(n.data?.environment == .sandbox)
        #expect(n.data?.transaction?.transactionReason == .renewal)
        #expect(n.data?.transaction?.transactionId == "2000001024998954")
        #expect(n.data?.renewalInfo?.originalTransactionId == "2000001024993299")
        #expect(n.data?.signedTransactionInfo.isEmpty == false)

        let consumption = verifier.verify(try Fixture.jws("notification-Sandbox-10"))
        guard case .notification(let c)? = PayloadDecoder.decode(consumption) else {
            Issue.record("expected a notification")
            return
        }
        #expect(c.notificationType == .consumptionRequest)
        #expect(c.data?.consumptionRequestReason == .unintendedPurchase)
        #expect(c.data?.appAppleId == 1_470_168_868)

        let resubscribe = PayloadDecoder.decode(verifier.verify(try Fixture.jws("notification-Sandbox-5")))
        guard case .notification(let s)? = resubscribe else { return }
        #expect(s.notificationType == .subscribed)
        #expect(s.subtype == .resubscribe)
    }

    @Test func everyGenuineSampleDecodes() throws {
        for name in Fixture.genuineNames {
            let result = verifier.verify(try Fixture.jws(name))
            #expect(PayloadDecoder.decode(result) != nil, "\(name)")
        }
    }

    @Test func unknownValuesNeverFail() throws {
        let json = Data(
            #"""
            {"transactionId":"1","type":"Lifetime Pass","inAppOwnershipType":"BORROWED","revocationReason":7,
             "offerType":9,"environment":"Staging","offerDiscountType":"HALF_OFF","revocationType":"NEW",
             "quantity":"two","price":12.5,"purchaseDate":-1,"brandNewField":{"a":[1,2]},
             "advancedCommerceInfo":{"requestReferenceId":"r","items":[{"sku":"x"}]}}
            """#.utf8)
        let t = try #require(PayloadDecoder.transaction(fromJSON: json))
        #expect(t.type == .unspecified)
        #expect(t.inAppOwnershipType == .unspecified)
        #expect(t.revocationReason == .unrecognized(8))
        #expect(t.offerType == .unrecognized(9))
        #expect(t.environment == .unspecified)
        #expect(t.quantity == 0)
        #expect(t.priceMilliunits == 0)
        #expect(t.purchaseDate == ProtoTimestamp(seconds: -1, nanos: 999_000_000))
        #expect(t.advancedCommerceInfoJson == #"{"items":[{"sku":"x"}],"requestReferenceId":"r"}"#)
        #expect(t.rawJson.contains("brandNewField"))

        let n = try #require(
            PayloadDecoder.notification(fromJSON: Data(#"{"notificationType":"SOMETHING_NEW","subtype":"ODD"}"#.utf8)))
        #expect(n.notificationType == .unspecified)
        #expect(n.notificationTypeRaw == "SOMETHING_NEW")
        #expect(n.subtypeRaw == "ODD")
        #expect(PayloadDecoder.transaction(fromJSON: Data("[]".utf8)) == nil)
    }

    @Test func appTransactionAndOtherNotificationShapes() throws {
        let a = try #require(
            PayloadDecoder.appTransaction(
                fromJSON: Data(
                    #"""
                    {"receiptType":"Production","appAppleId":531412,"bundleId":"com.example","applicationVersion":"1.2",
                     "versionExternalIdentifier":512,"receiptCreationDate":1698148900000,"originalPurchaseDate":1698148800000,
                     "originalApplicationVersion":"1.1","deviceVerification":"abc=","deviceVerificationNonce":"uuid",
                     "preorderDate":1698148950000,"appTransactionId":"71134","originalPlatform":"visionOS"}
                    """#.utf8)))
        #expect(a.receiptType == .production)
        #expect(a.appAppleId == 531_412)
        #expect(a.versionExternalIdentifier == 512)
        #expect(a.receiptCreationDate == timestamp(1_698_148_900_000))
        #expect(a.originalPlatform == .visionOS)
        #expect(a.appTransactionId == "71134")

        let summary = try #require(
            PayloadDecoder.notification(
                fromJSON: Data(
                    #"""
                    {"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","summary":{"environment":"LocalTesting",
                     "appAppleId":41234,"bundleId":"com.example","productId":"p","requestIdentifier":"efb27071",
                     "storefrontCountryCodes":["CAN","USA"],"succeededCount":5,"failedCount":2}}
                    """#.utf8)))
        #expect(summary.subtype == .summary)
        #expect(summary.summary?.environment == .localTesting)
        #expect(summary.summary?.storefrontCountryCodes == ["CAN", "USA"])
        #expect(summary.summary?.failedCount == 2)

        let token = try #require(
            PayloadDecoder.notification(
                fromJSON: Data(
                    #"""
                    {"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"UNREPORTED","externalPurchaseToken":
                     {"externalPurchaseId":"b2158121","tokenCreationDate":1698148900000,"appAppleId":55555,"bundleId":"com.example"}}
                    """#.utf8)))
        #expect(token.notificationType == .externalPurchaseToken)
        #expect(token.externalPurchaseToken?.tokenCreationDate == timestamp(1_698_148_900_000))

        let rescind = try #require(
            PayloadDecoder.notification(
                fromJSON: Data(
                    #"""
                    {"notificationType":"RESCIND_CONSENT","appData":{"appAppleId":41234,"bundleId":"com.example",
                     "environment":"Sandbox","signedAppTransactionInfo":"x.y.z"}}
                    """#.utf8)))
        #expect(rescind.notificationType == .rescindConsent)
        #expect(rescind.appData?.signedAppTransactionInfo == "x.y.z")
    }

    /// Offer type 5, the retention offer Apple showed at WWDC26, has its name in transactions and renewal infos.
    @Test func aRetentionOfferIsNamed() throws {
        let t = try #require(
            PayloadDecoder.transaction(
                fromJSON: Data(#"{"transactionId":"1","offerType":5,"offerIdentifier":"stay"}"#.utf8)))
        #expect(t.offerType == .retentionOffer && t.offerType.rawValue == 5 && t.offerIdentifier == "stay")
        let r = try #require(PayloadDecoder.renewalInfo(fromJSON: Data(#"{"offerType":5}"#.utf8)))
        #expect(r.offerType == .retentionOffer)
    }

    @Test func renewalCommitmentAndWinBack() throws {
        let r = try #require(
            PayloadDecoder.renewalInfo(
                fromJSON: Data(
                    #"""
                    {"autoRenewStatus":1,"expirationIntent":2,"priceIncreaseStatus":0,"isInBillingRetryPeriod":true,
                     "gracePeriodExpiresDate":1698148900000,"offerType":4,"offerDiscountType":"PAY_AS_YOU_GO",
                     "eligibleWinBackOfferIds":["a","b"],"renewalBillingPlanType":"MONTHLY",
                     "commitmentInfo":{"commitmentAutoRenewProductId":"p","commitmentAutoRenewStatus":0,
                      "commitmentRenewalBillingPlanType":"BILLED_UPFRONT","commitmentRenewalDate":1000,"commitmentRenewalPrice":9990}}
                    """#.utf8)))
        #expect(r.expirationIntent == .billingError)
        #expect(r.priceIncreaseStatus == .notResponded)
        #expect(r.isInBillingRetryPeriod)
        #expect(r.offerType == .winBackOffer)
        #expect(r.offerDiscountType == .payAsYouGo)
        #expect(r.eligibleWinBackOfferIds == ["a", "b"])
        #expect(r.renewalBillingPlanType == .monthly)
        #expect(r.commitmentInfo?.commitmentAutoRenewStatus == .off)
        #expect(r.commitmentInfo?.commitmentRenewalBillingPlanType == .billedUpfront)
        #expect(r.commitmentInfo?.commitmentRenewalPriceMilliunits == 9990)
    }

    @Test func failedVerificationDecodesNothing() throws {
        let result = verifier.verify(try Fixture.jws("transaction-Sandbox-1"), kind: .renewalInfo)
        #expect(result.status == .wrongKind)
        #expect(PayloadDecoder.decode(result) == nil)
    }
}

@Suite struct ProtoMappingTests {
    @Test func everyVerdictKindAndEnvironmentMapsOneToOne() {
        #expect(
            Set(VerificationVerdict.allCases.map(\.protoStatus.rawValue)).count == VerificationVerdict.allCases.count)
        #expect(!VerificationVerdict.allCases.contains { $0.protoStatus == .unspecified })
        for kind in SignedDataKind.allCases { #expect(SignedDataKind(kind.protoKind) == kind) }
        #expect(SignedDataKind(JWSKind.unspecified) == nil)
        for environment in AppStoreEnvironment.allCases {
            #expect(AppStoreEnvironment(environment.protoEnvironment) == environment)
        }
        #expect(AppStoreEnvironment(Environment.unspecified) == nil)
    }
}
