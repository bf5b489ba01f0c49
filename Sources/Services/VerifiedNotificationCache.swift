import Cryptography
import GatewayFoundation
import ProtoCodec
import SignedData

/// Stored notifications already verified and decoded, shared by every follower of one handler (and so of
/// one verifier and its settings): N followers reading the same stored entry cost one verification, not N.
///
/// An entry is keyed by the SHA-256 of the signed payload and the exact requirements it was verified
/// under (bundle id, app Apple id, environment), so a follower only ever receives what was verified for
/// its own app and environment. Only verified payloads are kept, each for `lifetime` (a revocation or a
/// changed root is seen again after at most that long), at most `capacity` of them.
final class VerifiedNotificationCache: Sendable {
    struct Key: Hashable, Sendable {
        var digest: [UInt8]
        var requirements: VerificationRequirements
    }

    private struct Entry {
        var notification: AppStoreNotification
        var until: MonotonicInstant
    }

    static let capacity = 1024
    static let lifetime: Duration = .seconds(60)
    private let entries = Lock<[Key: Entry]>([:])

    /// The key of `payload` verified under `requirements`.
    static func key(payload: String, requirements: VerificationRequirements) -> Key {
        Key(digest: SHA256.hash(Array(payload.utf8)), requirements: requirements)
    }

    /// The decoded notification when `key` was verified less than `lifetime` ago.
    func notification(for key: Key, now: MonotonicInstant) -> AppStoreNotification? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard now < entry.until else {
                entries[key] = nil
                return nil
            }
            return entry.notification
        }
    }

    /// Remembers that `key` verified (at `now`) and decoded to `notification`.
    func remember(_ notification: AppStoreNotification, for key: Key, now: MonotonicInstant) {
        entries.withLock { entries in
            if entries.count >= Self.capacity, entries[key] == nil {
                // Expired entries go first; when none has, the whole cache (a burst of distinct payloads).
                entries = entries.filter { now < $0.value.until }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[key] = Entry(notification: notification, until: now + Self.lifetime)
        }
    }

    /// How many verified payloads are held (for tests).
    var count: Int { entries.withLock { $0.count } }
}
