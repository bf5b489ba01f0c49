import GatewayFoundation
import ProtoCodec

/// Apple's dates as the reducer compares them: UNIX milliseconds, nil when Apple sent none.
///
/// The decoded payloads carry each date twice: a Timestamp (its presence says whether Apple sent the date) and
/// the exact milliseconds beside it (`<field>_millis`, set whenever the Timestamp is). The milliseconds win; a
/// payload built with the Timestamp alone still reads right.
enum AppleDate {
    /// The instant of a date field: `exact` when set, else the Timestamp's milliseconds, else nil.
    static func millis(_ timestamp: ProtoTimestamp?, exact: Int64) -> Int64? {
        if exact != 0 { return exact }
        guard let timestamp else { return nil }
        let (sum, overflow) = timestamp.seconds.multipliedSaturating(by: 1000)
            .addingReportingOverflow(Int64(timestamp.nanos / 1_000_000))
        return overflow ? .max : sum
    }
}

extension Transaction {
    /// `purchaseDate` in UNIX milliseconds.
    var purchasedAt: Int64? { AppleDate.millis(purchaseDate, exact: purchaseDateMillis) }
    /// `expiresDate` in UNIX milliseconds (auto-renewables only).
    var expiresAt: Int64? { AppleDate.millis(expiresDate, exact: expiresDateMillis) }
    /// `revocationDate` in UNIX milliseconds: set means refunded or revoked.
    var revokedAt: Int64? { AppleDate.millis(revocationDate, exact: revocationDateMillis) }
}

extension RenewalInfo {
    /// `gracePeriodExpiresDate` in UNIX milliseconds.
    var gracePeriodEndsAt: Int64? { AppleDate.millis(gracePeriodExpiresDate, exact: gracePeriodExpiresDateMillis) }
    /// `signedDate` in UNIX milliseconds.
    var signedAt: Int64? { AppleDate.millis(signedDate, exact: signedDateMillis) }
}
