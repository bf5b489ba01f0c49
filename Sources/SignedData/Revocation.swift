import Cryptography
import Foundation
import GatewayFoundation

/// Where OCSP requests go for online checks: the gateway's libcurl client. Awaited, so no thread blocks
/// while a responder answers.
package protocol OCSPTransport: Sendable {
    /// POSTs the DER OCSPRequest `request` (`application/ocsp-request`) to `url`.
    func post(_ request: [UInt8], to url: String) async -> OCSPTransportResult
}

/// What a responder did with an OCSP request.
package enum OCSPTransportResult: Sendable, Hashable {
    /// HTTP 200 with this body (not yet checked).
    case answered([UInt8])
    /// No usable answer: connection failure, timeout, or an HTTP status other than 200 (why, in words).
    case unreachable(String)
}

/// One certificate whose revocation status online checks still need, with everything to ask for it.
package struct RevocationQuery: Sendable {
    /// "leaf" or "intermediate", for messages.
    package let role: String
    let certificate: Certificate
    let issuer: Certificate
    let key: RevocationCache.Key
    /// The certificate's OCSP responders (its Authority Information Access), tried in order.
    package let responderURLs: [String]
    /// The DER OCSPRequest to send.
    package let request: [UInt8]
}

/// The outcome of one verification pass: a result, or the revocation statuses it still needs.
package enum VerificationStep: Sendable {
    case done(VerificationResult)
    /// Online checks need these statuses: fetch them (`OCSPTransport`), record them
    /// (`SignedDataVerifier.record`), then verify again.
    case needsRevocationStatus([RevocationQuery])
}

/// One pass of a verification that may need revocation statuses (`fetchingRevocationStatuses`): its value, or
/// the statuses to fetch before the next pass.
package enum RevocationPass<Value> {
    case done(Value)
    case needs([RevocationQuery])
}

/// Why a verification ended while fetching revocation statuses: `result` is the verdict to give (retryable
/// when a responder cannot be reached or answers unusably, `untrustedChain` for a revoked or unknown certificate).
package struct RevocationFailure: Error, Sendable {
    package let result: VerificationResult
    init(_ result: VerificationResult) { self.result = result }
}

/// OCSP answers per certificate (keyed by SHA-256 of the exact `x5c` text), kept until the answer's
/// nextUpdate, at most `maximumAge`, and at most `capacity` of them (the entry closest to expiry goes first).
final class RevocationCache: Sendable {
    struct Key: Hashable, Sendable {
        let digest: [UInt8]
        init(certificateText: some Collection<UInt8>) { digest = SHA256.hash(Array(certificateText)) }
    }

    enum Status: Sendable, Hashable {
        case good
        case revoked(at: Date)
    }

    private let entries = Lock<[Key: (status: Status, until: Date)]>([:])
    private let capacity: Int
    /// The longest an answer is kept, whatever its nextUpdate says.
    let maximumAge: TimeInterval
    /// How long an answer without nextUpdate is kept.
    let ageWithoutNextUpdate: TimeInterval

    init(capacity: Int, maximumAge: TimeInterval, ageWithoutNextUpdate: TimeInterval) {
        self.capacity = max(0, capacity)
        self.maximumAge = maximumAge
        self.ageWithoutNextUpdate = ageWithoutNextUpdate
    }

    var count: Int { entries.withLock { $0.count } }

    /// The status known for `key` at `now`, nil when unknown or expired.
    func status(for key: Key, now: Date) -> Status? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard now < entry.until else {
                entries[key] = nil
                return nil
            }
            return entry.status
        }
    }

    /// Keeps `status` for `key` until `nextUpdate` (or `ageWithoutNextUpdate` from `now`), capped at
    /// `maximumAge` from `now`, and at least a second (an answer just checked as current is used at once, even
    /// when its nextUpdate passed within the allowed clock skew).
    func insert(_ status: Status, for key: Key, nextUpdate: Date?, now: Date) {
        let until = max(min(nextUpdate ?? now + ageWithoutNextUpdate, now + maximumAge), now + 1)
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity {
                for (stale, entry) in entries where entry.until <= now { entries[stale] = nil }
                if entries.count >= capacity, let soonest = entries.min(by: { $0.value.until < $1.value.until }) {
                    entries[soonest.key] = nil
                }
            }
            entries[key] = (status, until)
        }
    }
}
