import AppStoreDomain
import Configuration
import Foundation
import ProtoCodec
import SignedData
import Testing

@testable import Services

/// Apple's own Xcode StoreKit testing samples (Tests/SignedDataTests/Fixtures/xcode, from Apple's Swift library)
/// through VerifyJWS for an app configured `environment: xcode`: UNVERIFIED_BY_DESIGN, and every value Apple's
/// libraries' tests assert for them, read the same way (fractional milliseconds truncated, a date before year 1
/// kept exactly in `<field>_millis` beside a clamped Timestamp).
@Suite struct XcodeSampleTests {
    static let bundleID = "com.example.naturelab.backyardbirds.example"
    /// 0001-01-01T00:00:00Z, the first instant a `google.protobuf.Timestamp` holds.
    static let firstTimestamp = ProtoTimestamp(seconds: -62_135_596_800, nanos: 0)

    let handler: VerifyJWSHandler

    init() throws {
        let configuration = try GatewayConfiguration.load(
            yaml: """
                apps:
                  - name: xcode-app
                    bundleId: \(Self.bundleID)
                    environment: xcode
                """)
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        handler = VerifyJWSHandler(
            verifier: try SignedDataVerifier(
                configuration: .init(configuration.verification, trustedRoots: roots)),
            apps: AppDirectory(configuration.apps))
    }

    static func sample(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SignedDataTests/Fixtures/xcode/\(name)")
        return String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    func verify(_ name: String, app: String = "xcode-app") throws -> VerifyJWSResponse {
        try handler.verify(VerifyJWSRequest(jws: try Self.sample(name), app: app))
    }

    @Test func transaction() throws {
        let answer = try verify("xcode-signed-transaction")
        #expect(answer.status == .unverifiedByDesign, "\(answer.message)")
        #expect(answer.kind == .transaction && answer.environment == .xcode)
        #expect(answer.signedDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_056))
        guard case .transaction(let t)? = answer.payload else {
            Issue.record("expected a transaction, got \(String(describing: answer.payload))")
            return
        }
        #expect(t.originalTransactionId == "0" && t.transactionId == "0" && t.webOrderLineItemId == "0")
        #expect(t.bundleId == Self.bundleID && t.productId == "pass.premium")
        #expect(t.subscriptionGroupIdentifier == "6F3A93AB")
        // Xcode writes 1697679936049.7297: Apple's libraries read 1697679936049.
        #expect(t.purchaseDateMillis == 1_697_679_936_049)
        #expect(t.purchaseDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_049))
        #expect(t.originalPurchaseDateMillis == 1_697_679_936_049)
        #expect(t.originalPurchaseDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_049))
        #expect(t.expiresDateMillis == 1_700_358_336_049)
        #expect(t.expiresDate == ProtoTimestamp(unixMilliseconds: 1_700_358_336_049))
        #expect(t.quantity == 1)
        #expect((t.type, t.typeRaw) == (.autoRenewable, "Auto-Renewable Subscription"))
        #expect(t.appAccountToken.isEmpty)
        #expect((t.inAppOwnershipType, t.inAppOwnershipTypeRaw) == (.purchased, "PURCHASED"))
        #expect(t.signedDateMillis == 1_697_679_936_056)
        #expect(t.signedDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_056))
        #expect(t.revocationReason == .unspecified)
        #expect(t.revocationDate == nil && t.revocationDateMillis == 0)
        #expect(t.isUpgraded == false && t.isUpgradedValue == ProtoBoolValue(value: false))
        #expect(t.offerType == .introductoryOffer)
        #expect(t.offerIdentifier.isEmpty)
        #expect((t.environment, t.environmentRaw) == (.xcode, "Xcode"))
        #expect(t.storefront == "USA" && t.storefrontId == "143441")
        #expect((t.transactionReason, t.transactionReasonRaw) == (.purchase, "PURCHASE"))
        #expect(t.rawJson.contains(#""signedDate":1697679936056.485"#))
    }

    @Test func renewalInfo() throws {
        let answer = try verify("xcode-signed-renewal-info")
        #expect(answer.status == .unverifiedByDesign, "\(answer.message)")
        #expect(answer.kind == .renewalInfo && answer.environment == .xcode)
        #expect(answer.signedDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_711))
        guard case .renewalInfo(let r)? = answer.payload else {
            Issue.record("expected a renewal info, got \(String(describing: answer.payload))")
            return
        }
        #expect(r.expirationIntent == .unspecified)
        #expect(r.originalTransactionId == "0")
        #expect(r.autoRenewProductId == "pass.premium" && r.productId == "pass.premium")
        #expect(r.autoRenewStatus == .on)
        #expect(r.isInBillingRetryPeriodValue == nil && r.isInBillingRetryPeriod == false)
        #expect(r.priceIncreaseStatus == .unspecified)
        #expect(r.gracePeriodExpiresDate == nil && r.gracePeriodExpiresDateMillis == 0)
        #expect(r.offerType == .unspecified && r.offerIdentifier.isEmpty)
        #expect(r.signedDateMillis == 1_697_679_936_711)
        #expect(r.signedDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_711))
        #expect((r.environment, r.environmentRaw) == (.xcode, "Xcode"))
        #expect(r.recentSubscriptionStartDateMillis == 1_697_679_936_049)
        #expect(r.recentSubscriptionStartDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_049))
        #expect(r.renewalDateMillis == 1_700_358_336_049)
        #expect(r.renewalDate == ProtoTimestamp(unixMilliseconds: 1_700_358_336_049))
    }

    @Test func appTransaction() throws {
        let answer = try verify("xcode-signed-app-transaction")
        #expect(answer.status == .unverifiedByDesign, "\(answer.message)")
        #expect(answer.kind == .appTransaction && answer.environment == .xcode)
        // receiptCreationDate 1697680122257.447, the verification time of an app transaction.
        #expect(answer.signedDate == ProtoTimestamp(unixMilliseconds: 1_697_680_122_257))
        guard case .appTransaction(let a)? = answer.payload else {
            Issue.record("expected an app transaction, got \(String(describing: answer.payload))")
            return
        }
        #expect(a.appAppleId == 0)
        #expect(a.bundleId == Self.bundleID)
        #expect(a.applicationVersion == "1")
        #expect(a.versionExternalIdentifier == 0)
        #expect(a.receiptCreationDateMillis == 1_697_680_122_257)
        // -62135769600000 is two days before year 1: the Timestamp is clamped, the exact value kept beside.
        #expect(a.originalPurchaseDateMillis == -62_135_769_600_000)
        #expect(a.originalPurchaseDate == Self.firstTimestamp)
        #expect(a.originalApplicationVersion == "1")
        #expect(a.deviceVerification == "cYUsXc53EbYc0pOeXG5d6/31LGHeVGf84sqSN0OrJi5u/j2H89WWKgS8N0hMsMlf")
        #expect(a.deviceVerificationNonce == "48c8b92d-ce0d-4229-bedf-e61b4f9cfc92")
        #expect(a.preorderDate == nil && a.preorderDateMillis == 0)
        #expect((a.receiptType, a.receiptTypeRaw) == (.xcode, "Xcode"))
    }

    /// As in Apple's tests: the same data for a production (or sandbox) app is refused, never decoded.
    @Test func otherAppsRefuseTheSamples() throws {
        let configuration = try GatewayConfiguration.load(
            yaml: """
                apps:
                  - name: production-app
                    bundleId: \(Self.bundleID)
                    appAppleId: 1234
                    issuerId: 00000000-0000-0000-0000-000000000000
                    keyId: ABCDEFGHIJ
                    privateKeyFile: /nonexistent/key.p8
                    environment: production
                """)
        let roots = try SignedDataVerifier.trustedRoots(configuration.verification)
        let production = VerifyJWSHandler(
            verifier: try SignedDataVerifier(configuration: .init(configuration.verification, trustedRoots: roots)),
            apps: AppDirectory(configuration.apps))
        for name in ["xcode-signed-transaction", "xcode-signed-renewal-info", "xcode-signed-app-transaction"] {
            let answer = try production.verify(VerifyJWSRequest(jws: try Self.sample(name), app: "production-app"))
            #expect(![.ok, .unverifiedByDesign].contains(answer.status), "\(name): \(answer.status)")
            #expect(answer.payload == nil)
        }
    }
}
