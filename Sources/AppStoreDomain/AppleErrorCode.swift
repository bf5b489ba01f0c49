import GatewayFoundation

/// An `errorCode` from an App Store Server API error body (Apple's App Store Server API documentation).
///
/// Codes the gateway knows carry Apple's name; any other integer is kept as is, because Apple adds
/// codes without notice and callers still deserve to see the number.
package struct AppleErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// Apple's numeric code, e.g. 4040010.
    package var rawValue: Int64

    /// Wraps any integer, known to the catalogue or not.
    package init(rawValue: Int64) { self.rawValue = rawValue }

    /// Apple's PascalCase name (`TransactionIdNotFound`), or nil for a code outside the catalogue.
    package var name: String? { Self.catalogue[rawValue] }

    /// Whether the catalogue knows this code.
    package var isKnown: Bool { name != nil }

    /// A stable UPPER_SNAKE reason for google.rpc.ErrorInfo (`TRANSACTION_ID_NOT_FOUND`);
    /// `APPLE_ERROR_<code>` for codes outside the catalogue.
    package var reason: String {
        guard let name else { return "APPLE_ERROR_\(rawValue)" }
        return Self.upperSnake(name)
    }

    /// The HTTP status Apple answers with: the code's first three digits (400xxxx → 400).
    /// Nil when the code does not have seven digits.
    package var httpStatus: Int? {
        guard (1_000_000...9_999_999).contains(rawValue) else { return nil }
        return Int(rawValue / 10_000)
    }

    /// Codes whose request may succeed later: Apple's "…Retryable" codes (4040002/4/6, 5000001) and 5000000
    /// GeneralInternal, for which Apple's documentation, like for every 500, says to try again later.
    package var isRetryable: Bool { Self.retryableCodes.contains(rawValue) }

    /// 4290000: the request may be repeated after the `Retry-After` time.
    package var isRateLimited: Bool { rawValue == Self.rateLimitExceeded.rawValue }

    package var description: String { name.map { "\($0) (\(rawValue))" } ?? "\(rawValue)" }

    /// PascalCase to UPPER_SNAKE, keeping acronyms together (`InvalidAppAccountTokenUUID` →
    /// `INVALID_APP_ACCOUNT_TOKEN_UUID`).
    static func upperSnake(_ pascal: String) -> String {
        let characters = Array(pascal)
        var result = ""
        for (index, character) in characters.enumerated() {
            if index > 0, character.isUppercase {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    result.append("_")
                }
            }
            result.append(contentsOf: character.uppercased())
        }
        return result
    }

    private static let retryableCodes: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 5_000_000, 5_000_001]
}

extension AppleErrorCode {
    /// 4000000 GeneralBadRequest.
    package static let generalBadRequest = AppleErrorCode(rawValue: 4_000_000)
    /// 4000012 StartDateTooFarInPast.
    package static let startDateTooFarInPast = AppleErrorCode(rawValue: 4_000_012)
    /// 4000017 PaginationTokenExpired (Get Notification History).
    package static let paginationTokenExpired = AppleErrorCode(rawValue: 4_000_017)
    /// 4040001 AccountNotFound.
    package static let accountNotFound = AppleErrorCode(rawValue: 4_040_001)
    /// 4040002 AccountNotFoundRetryable.
    package static let accountNotFoundRetryable = AppleErrorCode(rawValue: 4_040_002)
    /// 4040004 AppNotFoundRetryable.
    package static let appNotFoundRetryable = AppleErrorCode(rawValue: 4_040_004)
    /// 4040005 OriginalTransactionIdNotFound.
    package static let originalTransactionIdNotFound = AppleErrorCode(rawValue: 4_040_005)
    /// 4040010 TransactionIdNotFound: the transaction is not in this environment.
    package static let transactionIdNotFound = AppleErrorCode(rawValue: 4_040_010)
    /// 4040019 AppTransactionDoesNotExist.
    package static let appTransactionDoesNotExist = AppleErrorCode(rawValue: 4_040_019)
    /// 4290000 RateLimitExceeded.
    package static let rateLimitExceeded = AppleErrorCode(rawValue: 4_290_000)
    /// 5000000 GeneralInternal.
    package static let generalInternal = AppleErrorCode(rawValue: 5_000_000)
    /// 5000001 GeneralInternalRetryable.
    package static let generalInternalRetryable = AppleErrorCode(rawValue: 5_000_001)

    /// Every code the gateway names, by number: the App Store Server API's, the Retention Messaging API's and the
    /// Advanced Commerce API's (no number is in two of them).
    package static let catalogue: [Int64: String] = {
        let withRetention = appStoreServerCodes.merging(retentionMessagingCodes) { own, _ in own }
        return withRetention.merging(advancedCommerceCodes) { own, _ in own }
    }()

    /// The Retention Messaging API's 26 codes (4000161–4090001).
    package static let retentionMessagingCodes: [Int64: String] = [
        4_000_161: "InvalidImage",
        4_000_162: "HeaderTooLong",
        4_000_163: "BodyTooLong",
        4_000_164: "InvalidLocale",
        4_000_175: "AltTextTooLong",
        4_000_211: "InvalidPerformanceTestRequest",
        4_000_212: "InvalidRequestId",
        4_000_213: "ExistingPerformanceTestRun",
        4_000_215: "BadRequestRealtimeUrl",
        4_000_216: "BadRequestImageSize",
        4_000_218: "BadRequestTooManyBulletPoints",
        4_000_219: "BadRequestBulletPointTextTooLong",
        4_000_224: "BadRequestAboveImageRequiresAnImage",
        4_030_014: "MaximumNumberOfImagesReached",
        4_030_016: "MaximumNumberOfMessagesReached",
        4_030_017: "MessageNotApproved",
        4_030_018: "ImageNotApproved",
        4_030_019: "ImageInUse",
        4_030_026: "ForbiddenNoPassingTest",
        4_040_014: "ImageNotFound",
        4_040_015: "MessageNotFound",
        4_040_018: "PerformanceTestRunNotFound",
        4_040_020: "DefaultMessageNotFound",
        4_040_021: "RealtimeUrlNotFound",
        4_090_000: "ImageAlreadyExists",
        4_090_001: "MessageAlreadyExists",
    ]

    /// The App Store Server API's codes.
    static let appStoreServerCodes: [Int64: String] = [
        4_000_000: "GeneralBadRequest",
        4_000_002: "InvalidAppIdentifier",
        4_000_005: "InvalidRequestRevision",
        4_000_006: "InvalidTransactionId",
        4_000_008: "InvalidOriginalTransactionId",
        4_000_009: "InvalidExtendByDays",
        4_000_010: "InvalidExtendReasonCode",
        4_000_011: "InvalidRequestIdentifier",
        4_000_012: "StartDateTooFarInPast",
        4_000_013: "StartDateAfterEndDate",
        4_000_014: "InvalidPaginationToken",
        4_000_015: "InvalidStartDate",
        4_000_016: "InvalidEndDate",
        4_000_017: "PaginationTokenExpired",
        4_000_018: "InvalidNotificationType",
        4_000_019: "MultipleFiltersSupplied",
        4_000_020: "InvalidTestNotificationToken",
        4_000_021: "InvalidSort",
        4_000_022: "InvalidProductType",
        4_000_023: "InvalidProductId",
        4_000_024: "InvalidSubscriptionGroupIdentifier",
        4_000_025: "InvalidExcludeRevoked",
        4_000_026: "InvalidInAppOwnershipType",
        4_000_027: "InvalidEmptyStorefrontCountryCodeList",
        4_000_028: "InvalidStorefrontCountryCode",
        4_000_030: "InvalidRevoked",
        4_000_031: "InvalidStatus",
        4_000_032: "InvalidAccountTenure",
        4_000_033: "InvalidAppAccountToken",
        4_000_034: "InvalidConsumptionStatus",
        4_000_035: "InvalidCustomerConsented",
        4_000_036: "InvalidDeliveryStatus",
        4_000_037: "InvalidLifetimeDollarsPurchased",
        4_000_038: "InvalidLifetimeDollarsRefunded",
        4_000_039: "InvalidPlatform",
        4_000_040: "InvalidPlayTime",
        4_000_041: "InvalidSampleContentProvided",
        4_000_042: "InvalidUserStatus",
        4_000_043: "InvalidTransactionNotConsumable",
        4_000_047: "InvalidTransactionTypeNotSupported",
        4_000_048: "AppTransactionIdNotSupported",
        4_000_183: "InvalidAppAccountTokenUUID",
        4_000_185: "FamilyTransactionNotSupported",
        4_000_187: "TransactionIdIsNotOriginalTransactionId",
        4_030_004: "SubscriptionExtensionIneligible",
        4_030_005: "SubscriptionMaxExtension",
        4_030_007: "FamilySharedSubscriptionExtensionIneligible",
        4_040_001: "AccountNotFound",
        4_040_002: "AccountNotFoundRetryable",
        4_040_003: "AppNotFound",
        4_040_004: "AppNotFoundRetryable",
        4_040_005: "OriginalTransactionIdNotFound",
        4_040_006: "OriginalTransactionIdNotFoundRetryable",
        4_040_007: "ServerNotificationUrlNotFound",
        4_040_008: "TestNotificationNotFound",
        4_040_009: "StatusRequestNotFound",
        4_040_010: "TransactionIdNotFound",
        4_040_019: "AppTransactionDoesNotExist",
        4_290_000: "RateLimitExceeded",
        5_000_000: "GeneralInternal",
        5_000_001: "GeneralInternalRetryable",
    ]
}
