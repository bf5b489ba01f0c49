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
/// then let go and read again when needed. At most `capacity` entries; when full, the one kept longest makes room
/// (first in, first out: reads of a working set larger than the cache find it cold either way, so the choice is
/// made cheap, not clever). Not `Dictionary.remove(at: startIndex)`: taking always the lowest bucket leaves the
/// keys crowded in the table's upper buckets, where every lookup walks a long run of them (with 20,000 ids read
/// at random, a fifth of a GetSubscription's CPU went on comparing keys).
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
    private let storage = Lock(Storage())

    /// The entries, and the order they came in: `order[slot]` is the key whose entry names `slot` (nil: free);
    /// `cursor` the slot that makes room next. A slot freed by `forget` goes to the next new key the cursor
    /// reaches it with, so the order is first in, first out but for those.
    private struct Storage {
        var entries: [SubscriptionKey: (entry: Entry, slot: Int)] = [:]
        var order: [SubscriptionKey?] = []
        var cursor = 0

        /// A slot for a new key, making room (the oldest key is let go) when `capacity` are held.
        mutating func slot(capacity: Int) -> Int {
            if order.count < capacity {
                order.append(nil)
                return order.count - 1
            }
            while true {
                let slot = cursor
                cursor = cursor + 1 == order.count ? 0 : cursor + 1
                if let held = order[slot] {
                    guard entries.count >= capacity else { continue }
                    entries[held] = nil
                    order[slot] = nil
                }
                return slot
            }
        }
    }

    init(capacity: Int = RecordCache.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// What is kept for `key`.
    func entry(_ key: SubscriptionKey) -> Entry? {
        storage.withLock { $0.entries[key]?.entry }
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
        storage.withLock { storage in
            if let held = storage.entries[key] {
                storage.entries[key] = (entry, held.slot)
                return
            }
            let slot = storage.slot(capacity: capacity)
            storage.order[slot] = key
            storage.entries[key] = (entry, slot)
        }
    }

    /// Forgets `key` (its record is no longer stored).
    func forget(_ key: SubscriptionKey) {
        storage.withLock { storage in
            guard let held = storage.entries.removeValue(forKey: key) else { return }
            storage.order[held.slot] = nil
        }
    }

    /// How many records are kept (tests).
    var count: Int { storage.withLock { $0.entries.count } }
}
