import Testing

@testable import AppStoreDomain

@Suite struct AppleErrorCodeTests {
    @Test func catalogueCoversSection5() {
        let consumptionFields: [Int64] = Array(4_000_032...4_000_042)
        let listed: [Int64] =
            [
                4_000_000, 4_000_002, 4_000_005, 4_000_006, 4_000_008, 4_000_009, 4_000_010, 4_000_011, 4_000_012,
                4_000_013, 4_000_014, 4_000_015, 4_000_016, 4_000_017, 4_000_018, 4_000_019, 4_000_020, 4_000_021,
                4_000_022, 4_000_023, 4_000_024, 4_000_025, 4_000_026, 4_000_027, 4_000_028, 4_000_030, 4_000_031,
                4_000_043, 4_000_047, 4_000_048, 4_000_183, 4_000_185, 4_000_187, 4_030_004, 4_030_005, 4_030_007,
                4_040_001, 4_040_002, 4_040_003, 4_040_004, 4_040_005, 4_040_006, 4_040_007, 4_040_008, 4_040_009,
                4_040_010, 4_040_019, 4_290_000, 5_000_000, 5_000_001,
            ] + consumptionFields
        #expect(
            Set(listed + retentionMessaging)
                == Set(AppleErrorCode.appStoreServerCodes.keys).union(AppleErrorCode.retentionMessagingCodes.keys))
        for code in (listed + retentionMessaging).map(AppleErrorCode.init(rawValue:)) {
            #expect(code.httpStatus == Int(code.rawValue / 10_000))
        }
    }

    /// The Retention Messaging API's 26 codes, as Apple's libraries list them.
    private let retentionMessaging: [Int64] = [
        4_000_161, 4_000_162, 4_000_163, 4_000_164, 4_000_175, 4_000_211, 4_000_212, 4_000_213, 4_000_215, 4_000_216,
        4_000_218, 4_000_219, 4_000_224, 4_030_014, 4_030_016, 4_030_017, 4_030_018, 4_030_019, 4_030_026, 4_040_014,
        4_040_015, 4_040_018, 4_040_020, 4_040_021, 4_090_000, 4_090_001,
    ]

    @Test func retentionMessagingCodesAreTwentySixAndNamed() {
        #expect(AppleErrorCode.retentionMessagingCodes.count == 26)
        #expect(Set(AppleErrorCode.retentionMessagingCodes.keys) == Set(retentionMessaging))
        #expect(AppleErrorCode(rawValue: 4_000_224).reason == "BAD_REQUEST_ABOVE_IMAGE_REQUIRES_AN_IMAGE")
        #expect(AppleErrorCode(rawValue: 4_090_001).name == "MessageAlreadyExists")
        #expect(AppleErrorCode(rawValue: 4_090_001).httpStatus == 409)
        #expect(AppleErrorCode(rawValue: 4_030_026).reason == "FORBIDDEN_NO_PASSING_TEST")
    }

    @Test func advancedCommerceCodesJoinTheCatalogueWithoutRenamingAppStoreCodes() {
        let advanced = AppleErrorCode.advancedCommerceCodes
        #expect(advanced.count > 100)
        #expect(Set(advanced.keys).isDisjoint(with: AppleErrorCode.appStoreServerCodes.keys))
        #expect(Set(advanced.keys).isDisjoint(with: AppleErrorCode.retentionMessagingCodes.keys))
        #expect(
            AppleErrorCode.catalogue.count
                == AppleErrorCode.appStoreServerCodes.count + AppleErrorCode.retentionMessagingCodes.count
                + advanced.count)
        for (code, name) in advanced {
            #expect(AppleErrorCode(rawValue: code).name == name)
            #expect([400, 401, 403, 404].contains(AppleErrorCode(rawValue: code).httpStatus ?? 0))
            #expect(!name.hasSuffix("Error"))
        }
        let repeated = AppleErrorCode(rawValue: 4_000_097)
        #expect(repeated.reason == "REPEATED_REQUEST_REFERENCE_ID" && repeated.httpStatus == 400)
        #expect(AppleErrorCode(rawValue: 4_030_015).reason == "INACTIVE_ACA_SUB")
        #expect(AppleErrorCode(rawValue: 4_040_016).name == "ProductNotFound")
    }

    @Test(arguments: [
        (Int64(4_040_010), "TransactionIdNotFound", "TRANSACTION_ID_NOT_FOUND", 404),
        (4_000_183, "InvalidAppAccountTokenUUID", "INVALID_APP_ACCOUNT_TOKEN_UUID", 400),
        (4_000_039, "InvalidPlatform", "INVALID_PLATFORM", 400),
        (4_000_033, "InvalidAppAccountToken", "INVALID_APP_ACCOUNT_TOKEN", 400),
        (4_290_000, "RateLimitExceeded", "RATE_LIMIT_EXCEEDED", 429),
        (
            4_030_007, "FamilySharedSubscriptionExtensionIneligible", "FAMILY_SHARED_SUBSCRIPTION_EXTENSION_INELIGIBLE",
            403
        ),
    ])
    func namesAndReasons(code: Int64, name: String, reason: String, http: Int) {
        let error = AppleErrorCode(rawValue: code)
        #expect(error.name == name)
        #expect(error.reason == reason)
        #expect(error.httpStatus == http)
    }

    @Test func retryableAndRateLimitedFlags() {
        let retryable = AppleErrorCode.catalogue.keys.filter { AppleErrorCode(rawValue: $0).isRetryable }
        #expect(Set(retryable) == [4_040_002, 4_040_004, 4_040_006, 5_000_000, 5_000_001])
        #expect(AppleErrorCode.rateLimitExceeded.isRateLimited)
        #expect(!AppleErrorCode.rateLimitExceeded.isRetryable)
        #expect(AppleErrorCode.generalInternal.isRetryable)
    }

    @Test func unknownCodesKeepTheirNumber() {
        let code = AppleErrorCode(rawValue: 4_000_999)
        #expect(!code.isKnown)
        #expect(code.name == nil)
        #expect(code.reason == "APPLE_ERROR_4000999")
        #expect(code.httpStatus == 400)
        #expect(AppleErrorCode(rawValue: 42).httpStatus == nil)
        #expect(code.description == "4000999")
    }

    @Test func parsesAppleErrorBody() {
        let body = Array(#"{"errorCode": 4040010, "errorMessage": "Transaction id not found."}"#.utf8)
        let parsed = AppleErrorBody.parse(body, contentType: "application/json; charset=utf-8")
        #expect(parsed == AppleErrorBody(code: .transactionIdNotFound, message: "Transaction id not found."))
    }

    @Test func parsingIsTolerant() {
        let json = Array(#"{"errorCode":"4290000","extra":[1,2]}"#.utf8)
        #expect(AppleErrorBody.parse(json, contentType: "Application/JSON")?.code == .rateLimitExceeded)
        #expect(AppleErrorBody.parse(json, contentType: nil)?.message == nil)
        #expect(AppleErrorBody.parse(Array(#"{"errorCode":1}"#.utf8), contentType: "text/html") == nil)
        #expect(AppleErrorBody.parse(Array("Unauthenticated".utf8), contentType: "application/json") == nil)
        #expect(AppleErrorBody.parse([], contentType: "application/json") == nil)
        #expect(AppleErrorBody.parse(Array("[1]".utf8), contentType: nil) == nil)
        #expect(AppleErrorBody.parse(Array(#"{"errorMessage":"x"}"#.utf8), contentType: nil) == nil)
        #expect(AppleErrorBody.parse(Array(#"{"errorCode":1.5}"#.utf8), contentType: nil) == nil)
    }
}
