import Foundation
import GatewayFoundation
import ProtoCodec
import Testing

@testable import SignedData

/// Dates as Apple's libraries read them: whole milliseconds (a fraction truncated toward zero, as Apple's Python
/// library does), a Timestamp clamped to its range with the exact value in `<field>_millis`, and hostile numbers
/// neither trapping nor making a payload MALFORMED.
@Suite struct PayloadDateTests {
    let verifier: SignedDataVerifier

    init() throws {
        verifier = try SignedDataVerifier(configuration: .init(trustedRoots: [Fixture.appleRoot()]))
    }

    private func read(_ json: String) -> Int64? {
        PayloadValue.milliseconds(JSONValue.object(from: Data(#"{"d":\#(json)}"#.utf8))?["d"])
    }

    @Test func everyJSONNumberIsWholeMilliseconds() {
        #expect(read("1697679936056") == 1_697_679_936_056)
        #expect(read("1697679936056.485") == 1_697_679_936_056)
        #expect(read("1697679936049.999") == 1_697_679_936_049)
        // Parsed as a double first, as Apple's Python library does: .9999 is nearer 50 than any double below it.
        #expect(read("1697679936049.9999") == 1_697_679_936_050)
        #expect(read("-62135769600000") == -62_135_769_600_000)
        #expect(read("-1.5") == -1)  // toward zero, as Python's int() does
        #expect(read("1.697679936056485e12") == 1_697_679_936_056)
        #expect(read("1E3") == 1000)
        #expect(read("9223372036854775807") == .max)
        #expect(read("9223372036854775808") == .max)  // past int64: saturated, never a trap
        #expect(read("-1e300") == .min)
        #expect(read("1e999") == .max)  // parses as +infinity
        #expect(read(#""1697679936056""#) == nil)
        #expect(read("true") == nil && read("null") == nil && read("[1]") == nil)
        #expect(PayloadValue.milliseconds(nil) == nil)
    }

    @Test func timestampsAreClampedToTheirRange() {
        #expect(PayloadValue.timestamp(1_697_679_936_056) == ProtoTimestamp(seconds: 1_697_679_936, nanos: 56_000_000))
        #expect(PayloadValue.timestamp(-1) == ProtoTimestamp(seconds: -1, nanos: 999_000_000))
        let first = ProtoTimestamp(seconds: -62_135_596_800, nanos: 0)
        let last = ProtoTimestamp(seconds: 253_402_300_799, nanos: 999_000_000)
        #expect(PayloadValue.timestamp(-62_135_596_800_000) == first)
        #expect(PayloadValue.timestamp(-62_135_769_600_000) == first)
        #expect(PayloadValue.timestamp(.min) == first)
        #expect(PayloadValue.timestamp(253_402_300_799_999) == last)
        #expect(PayloadValue.timestamp(.max) == last)
    }

    @Test func everyDateFieldKeepsItsExactMilliseconds() throws {
        let transaction = try #require(
            PayloadDecoder.transaction(
                fromJSON: Data(
                    #"""
                    {"transactionId":"1","purchaseDate":1697679936049.7297,"originalPurchaseDate":-62135769600000,
                     "expiresDate":1e300,"signedDate":1697679936056.485,"revocationDate":"soon",
                     "commitmentInfo":{"commitmentExpiresDate":253402300800000},
                     "advancedCommerceInfo":{"items":[{"SKU":"a","revocationDate":1.5,
                       "refunds":[{"refundDate":-0.9}]}]}}
                    """#.utf8)))
        #expect(transaction.purchaseDateMillis == 1_697_679_936_049)
        #expect(transaction.purchaseDate == ProtoTimestamp(unixMilliseconds: 1_697_679_936_049))
        #expect(transaction.originalPurchaseDateMillis == -62_135_769_600_000)
        #expect(transaction.originalPurchaseDate == ProtoTimestamp(seconds: -62_135_596_800, nanos: 0))
        #expect(transaction.expiresDateMillis == .max)
        #expect(transaction.expiresDate == ProtoTimestamp(seconds: 253_402_300_799, nanos: 999_000_000))
        #expect(transaction.signedDateMillis == 1_697_679_936_056)
        // Not a number: absent, as any mistyped member is.
        #expect(transaction.revocationDate == nil && transaction.revocationDateMillis == 0)
        #expect(transaction.commitmentInfo?.commitmentExpiresDateMillis == 253_402_300_800_000)
        #expect(transaction.commitmentInfo?.commitmentExpiresDate?.seconds == 253_402_300_799)
        let item = try #require(transaction.advancedCommerceInfo?.items.first)
        #expect(item.revocationDateMillis == 1 && item.revocationDate == ProtoTimestamp(unixMilliseconds: 1))
        #expect(item.refunds.first?.refundDateMillis == 0)
        #expect(item.refunds.first?.refundDate == ProtoTimestamp(seconds: 0, nanos: 0))

        let renewal = try #require(
            PayloadDecoder.renewalInfo(
                fromJSON: Data(
                    #"""
                    {"autoRenewStatus":1,"signedDate":1697679936711.0747,"gracePeriodExpiresDate":2.5e12,
                     "recentSubscriptionStartDate":1697679936049.7297,"renewalDate":1700358336049.7297,
                     "commitmentInfo":{"commitmentRenewalDate":1700358336049.5}}
                    """#.utf8)))
        #expect(renewal.signedDateMillis == 1_697_679_936_711)
        #expect(renewal.gracePeriodExpiresDateMillis == 2_500_000_000_000)
        #expect(renewal.recentSubscriptionStartDateMillis == 1_697_679_936_049)
        #expect(renewal.renewalDateMillis == 1_700_358_336_049)
        #expect(renewal.commitmentInfo?.commitmentRenewalDateMillis == 1_700_358_336_049)

        let app = try #require(
            PayloadDecoder.appTransaction(
                fromJSON: Data(
                    #"{"receiptType":"Xcode","receiptCreationDate":1697680122257.447,"preorderDate":-1e999}"#.utf8)))
        #expect(app.receiptCreationDateMillis == 1_697_680_122_257)
        #expect(app.preorderDateMillis == .min)
        #expect(app.preorderDate == ProtoTimestamp(seconds: -62_135_596_800, nanos: 0))

        let notification = try #require(
            PayloadDecoder.notification(
                fromJSON: Data(
                    #"""
                    {"notificationType":"EXTERNAL_PURCHASE_TOKEN","signedDate":1697679936056.485,
                     "externalPurchaseToken":{"tokenCreationDate":1697679936000.9,"tokenExpirationDate":1.7e12}}
                    """#.utf8)))
        #expect(notification.signedDateMillis == 1_697_679_936_056)
        #expect(notification.externalPurchaseToken?.tokenCreationDateMillis == 1_697_679_936_000)
        #expect(notification.externalPurchaseToken?.tokenExpirationDateMillis == 1_700_000_000_000)

        let realtime = try #require(
            PayloadDecoder.realtimeRequest(
                fromJSON: Data(#"{"userLocale":"en-US","requestIdentifier":"r","signedDate":1.5e12}"#.utf8)))
        #expect(realtime.signedDateMillis == 1_500_000_000_000)
    }

    /// The verification time: a fraction is read like every other date; a non-number, or an instant no signer can
    /// have signed at (before 1970, after 9999, past int64), is refused before it picks the chain's time.
    @Test func theSignedDateOfVerification() throws {
        let requirements = try VerificationRequirements(
            bundleID: "com.example.app", appAppleID: nil, acceptedEnvironments: [.xcode, .localTesting]
        )
        .acceptingUnverified([.xcode, .localTesting])
        func verdict(_ signedDate: String) -> VerificationResult {
            let payload = #"""
                {"transactionId":"1","bundleId":"com.example.app","environment":"Xcode","signedDate":\#(signedDate)}
                """#
            return verifier.verify(UnverifiedByDesignTests.xcodeJWS(Data(payload.utf8)), requirements: requirements)
        }
        let fractional = verdict("1697679936056.485")
        #expect(fractional.status == .unverifiedByDesign, "\(fractional.message)")
        #expect(fractional.signedDate == Date(timeIntervalSince1970: 1_697_679_936.056))
        #expect(verdict("1.697679936056485e12").signedDate == Date(timeIntervalSince1970: 1_697_679_936.056))
        for absurd in ["-1.5", "-62135769600000", "253402300800000", "1e300", "1e999", "-1e999"] {
            let result = verdict(absurd)
            #expect(result.status == .malformed, "\(absurd)")
            #expect(result.message.contains("signedDate is outside"), "\(absurd): \(result.message)")
        }
        for notANumber in [#""1697679936056""#, "true", "[]"] {
            let result = verdict(notANumber)
            #expect(result.status == .malformed && result.message == "signedDate is not a number of milliseconds")
        }
    }
}
