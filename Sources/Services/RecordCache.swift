import GatewayFoundation
import NotificationStore
import SubscriptionState

/// The records the state read last, by key, each with the stamp it was read at (`RecordStamp`: version, time of
/// the last change, current transaction). A read asks the store whether the record still has that stamp — a few
/// small columns, in the same single read — and when it does, the kept record is used instead of reading and
/// decoding its two JWS and snapshots again. Never the truth: every read checks the store, so a change made by
/// any replica is seen by the next read. At most `capacity` records (~19 KB each); when full, one that is held
/// makes room (an arbitrary one: reads of a working set larger than the cache find it cold either way).
final class RecordCache: Sendable {
    /// `subscriptions.recordCacheSize`'s default.
    static let defaultCapacity = 2_048

    private struct Entry {
        var record: SubscriptionRecord
        var stamp: RecordStamp
    }

    let capacity: Int
    private let entries = Lock<[SubscriptionKey: Entry]>([:])

    init(capacity: Int = RecordCache.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// The record kept for `key` and the stamp it was read at.
    func entry(_ key: SubscriptionKey) -> (record: SubscriptionRecord, stamp: RecordStamp)? {
        entries.withLock { $0[key].map { ($0.record, $0.stamp) } }
    }

    /// Keeps `record`, read at `stamp`, for `key`.
    func keep(_ record: SubscriptionRecord, stamp: RecordStamp, for key: SubscriptionKey) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.remove(at: entries.startIndex) }
            entries[key] = Entry(record: record, stamp: stamp)
        }
    }

    /// Forgets `key` (its record is no longer stored).
    func forget(_ key: SubscriptionKey) {
        entries.withLock { $0[key] = nil }
    }

    /// How many records are kept (tests).
    var count: Int { entries.withLock { $0.count } }
}
