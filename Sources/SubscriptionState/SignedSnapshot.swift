import ProtoCodec

/// A payload Apple signed, as the reducer keeps it: the JWS exactly as received (for callers who verify it
/// themselves) and what it decodes to. The reducer trusts it: verification happens before (SignedData).
package struct SignedSnapshot<Payload: AppleSignedPayload>: Sendable, Hashable {
    /// The compact JWS, byte for byte as Apple (or the app) sent it.
    package var jws: String
    /// The decoded payload of `jws`.
    package var payload: Payload

    /// A snapshot of `payload`, signed as `jws`.
    package init(jws: String, payload: Payload) {
        self.jws = jws
        self.payload = payload
    }

    /// Apple's `signedDate` in UNIX milliseconds; nil when the payload carries none.
    package var signedDateMillis: Int64? { AppleDate.millis(payload.signedDate, exact: payload.signedDateMillis) }

    /// Whether this snapshot replaces `other` of the same object: it was signed later, or in the same millisecond
    /// and its JWS sorts after `other`'s (UTF-8 bytes). The order is total, so the newest of any set of snapshots
    /// is the same whatever order they arrive in; a retry (the same JWS again) never replaces anything.
    package func supersedes(_ other: SignedSnapshot) -> Bool {
        let mine = signedDateMillis ?? .min
        let theirs = other.signedDateMillis ?? .min
        if mine != theirs { return mine > theirs }
        // A retry, the commonest tie, is settled without walking its bytes: a compact JWS is ASCII (base64url and
        // dots), for which String equality is byte equality.
        if jws == other.jws { return false }
        return other.jws.utf8.lexicographicallyPrecedes(jws.utf8)
    }
}

/// A decoded payload that carries Apple's `signedDate`: `Transaction` and `RenewalInfo`.
package protocol AppleSignedPayload: Sendable, Hashable {
    /// Apple's `signedDate` as a Timestamp (nil when absent).
    var signedDate: ProtoTimestamp? { get }
    /// Apple's `signedDate` in UNIX milliseconds, exact (0 when absent).
    var signedDateMillis: Int64 { get }
}

extension Transaction: AppleSignedPayload {}
extension RenewalInfo: AppleSignedPayload {}

/// A signed transaction (Apple's JWSTransaction) and its decoded payload.
package typealias SignedTransaction = SignedSnapshot<Transaction>
/// A signed renewal info (Apple's JWSRenewalInfo) and its decoded payload.
package typealias SignedRenewalInfo = SignedSnapshot<RenewalInfo>
