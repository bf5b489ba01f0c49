/// Which App Store Server API calls may be repeated after an answer was lost.
///
/// A read is always safe to repeat. A write is safe only when doing it twice leaves the same state as doing it
/// once: Send Consumption Information (the same data replaces itself), Set App Account Token (sets one value) and
/// Finish Transaction (a finished transaction stays finished). The Advanced Commerce API's writes carry a
/// `requestReferenceId` Apple keeps: a repeat with the same id (the gateway resends the same body) is the same
/// request, so they are repeated too. Extending a renewal date, the mass extension and
/// requesting a test notification act again on every call, so after a connection failure, a timeout or a 5xx
/// without Apple's error body (the request may have been carried out) they are not repeated; they are repeated only
/// when Apple's own error code says the request was not carried out and may be retried.
///
/// In the Retention Messaging API, configuring a default message or the realtime URL sets one value (safe to
/// repeat). Uploads, deletions and starting a performance test are not repeated after a lost answer: the state would
/// be the same, but the repeat would be answered ImageAlreadyExists, MessageAlreadyExists, a …NotFound or
/// ExistingPerformanceTestRun, hiding that the first call succeeded.
extension AppleEndpoint {
    /// Whether repeating the request after a lost or ambiguous answer is safe.
    package var isIdempotent: Bool {
        switch self {
        case .extendSubscriptionRenewalDate, .extendRenewalDatesForAllActiveSubscribers, .requestTestNotification,
            .uploadImage, .deleteImage, .uploadMessage, .deleteMessage, .deleteDefaultMessage, .deleteRealtimeUrl,
            .initiatePerformanceTest:
            false
        default:
            true
        }
    }

    /// Whether the endpoint only reads (identical concurrent calls may share one upstream call).
    package var isRead: Bool { method == .get || self == .getNotificationHistory }
}

extension AttemptOutcome {
    /// Whether a call that is not idempotent may be repeated after this outcome: only when Apple answered with one
    /// of the codes it names "…Retryable" (so it did not carry the request out). GeneralInternal (5000000) is
    /// retried for reads but not here: it says nothing about whether the write happened.
    package var isRetryableWithoutIdempotency: Bool {
        switch self {
        case .appleError(let status, let code?): status != 429 && code.isRetryable && code != .generalInternal
        default: false
        }
    }
}

extension AppleErrorCode {
    /// Apple's answers meaning "no such id here", after which `auto` tries the next environment (a sandbox
    /// purchase is unknown to production): TransactionIdNotFound (4040010), OriginalTransactionIdNotFound
    /// (4040005, the extension and app account token endpoints) and AppTransactionDoesNotExist (4040019).
    package var isNotFoundInEnvironment: Bool {
        self == .transactionIdNotFound || self == .originalTransactionIdNotFound || self == .appTransactionDoesNotExist
    }
}
