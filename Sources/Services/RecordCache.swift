import GRPC
import GatewayFoundation
import NotificationStore
import SubscriptionState

/// The records the state read last, by key, each with the stamp it was read at (`RecordStamp`: version, time of
/// the last change, current transaction). A read asks the store whether the record still has that stamp — a few
/// small columns — and when it does, what is kept is used instead of reading and decoding its two JWS and
/// snapshots again. Never the truth: every read checks the store, so a change made by any replica is seen by the
/// next read.
///
/// What is kept for a key is the record as read (~19 KB), or, once GetSubscription has answered from it, that
/// answer encoded (`KeptAnswer`, ~13 KB: the message with both JWS), which is handed out again while the record is
/// unchanged and time has not moved its state (`SubscriptionRecord.nextTransitionMillis`); the record itself is
/// then let go and read again when needed. At most `capacity` entries; when full, one that is held makes room
/// (an arbitrary one: reads of a working set larger than the cache find it cold either way).
final class RecordCache: Sendable {
    /// `subscriptions.recordCacheSize`'s default.
    static let defaultCapacity = 2_048

    /// A GetSubscription answer made from a record, framed, and the span of time over which the record's state
    /// is what it says, for the app it was made for.
    struct KeptAnswer: Sendable {
        let app: String
        /// When it was derived (UNIX ms): before that, time may have been set back past a change.
        let fromMillis: Int64
        /// The record's next transition after `fromMillis` (nil: none ahead).
        let untilMillis: Int64?
        let framed: FramedMessage

        /// Whether it is the answer for `app` at `nowMillis` (the record unchanged).
        func holds(app: String, at nowMillis: Int64) -> Bool {
            app == self.app && nowMillis >= fromMillis && untilMillis.map { nowMillis < $0 } ?? true
        }
    }

    /// What is kept for a key: the record as read, or the answer made from it in its place.
    enum Kept: Sendable {
        case record(SubscriptionRecord)
        case answer(KeptAnswer)
    }

    struct Entry: Sendable {
        /// The stamp of the record kept, or of the one the answer was made from.
        var stamp: RecordStamp
        var kept: Kept

        var record: SubscriptionRecord? {
            if case .record(let record) = kept { return record }
            return nil
        }

        var answer: KeptAnswer? {
            if case .answer(let answer) = kept { return answer }
            return nil
        }
    }

    let capacity: Int
    private let entries = Lock<[SubscriptionKey: Entry]>([:])

    init(capacity: Int = RecordCache.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// What is kept for `key`.
    func entry(_ key: SubscriptionKey) -> Entry? {
        entries.withLock { $0[key] }
    }

    /// Keeps `record`, read at `stamp`, for `key` (in place of anything kept for it).
    func keep(_ record: SubscriptionRecord, stamp: RecordStamp, for key: SubscriptionKey) {
        put(Entry(stamp: stamp, kept: .record(record)), for: key)
    }

    /// Keeps `answer`, made from the record `key` had at `stamp`, in place of the record.
    func keep(answer: KeptAnswer, stamp: RecordStamp, for key: SubscriptionKey) {
        put(Entry(stamp: stamp, kept: .answer(answer)), for: key)
    }

    private func put(_ entry: Entry, for key: SubscriptionKey) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.remove(at: entries.startIndex) }
            entries[key] = entry
        }
    }

    /// Forgets `key` (its record is no longer stored).
    func forget(_ key: SubscriptionKey) {
        entries.withLock { $0[key] = nil }
    }

    /// How many records are kept (tests).
    var count: Int { entries.withLock { $0.count } }
}
