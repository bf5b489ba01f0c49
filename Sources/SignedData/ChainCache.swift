import Cryptography
import Foundation
import GatewayFoundation
import Synchronization

/// Successful chain validations, so a warm verification costs one ECDSA verify plus parsing.
///
/// Keyed by SHA-256 of the exact `x5c[0]` and `x5c[1]` base64 texts, so a hit needs neither decoding
/// nor parsing. Text keys never alias: strict base64 (see `Base64`) gives every byte string exactly one
/// text, so equal texts mean equal DER and vice versa, and an entry is only inserted under the texts of
/// the chain whose full validation created it. Bytes are hashed, not `String`s, whose equality is
/// Unicode canonical equivalence (U+212A KELVIN SIGN == "K"). An entry records the validated path's common
/// validity window and is used only while the clock is inside it and only for verification times inside
/// it. Sharded: each shard is a small LRU behind its own `Lock`, held for a dictionary lookup or insert.
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let digest: [UInt8]
        /// SHA-256(8-byte length of `leafText` ‖ `leafText` ‖ `intermediateText`): the length prefix
        /// keeps the boundary between the two texts unambiguous.
        init(leafText: some Collection<UInt8>, intermediateText: some Collection<UInt8>) {
            var input: [UInt8] = []
            input.reserveCapacity(8 + leafText.count + intermediateText.count)
            withUnsafeBytes(of: UInt64(leafText.count).littleEndian) { input.append(contentsOf: $0) }
            input.append(contentsOf: leafText)
            input.append(contentsOf: intermediateText)
            digest = SHA256.hash(input)
        }

        /// The digest's bytes in one call (the synthesized hash would feed them to the hasher one by one).
        func hash(into hasher: inout Hasher) {
            digest.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    struct Entry: Sendable {
        let leafKey: ECPublicKey
        let validFrom: Date
        let validUntil: Date
    }

    private struct ShardState {
        var entries: [Key: (entry: Entry, lastUse: UInt64)] = [:]
        var tick: UInt64 = 0
    }

    /// One lock and its LRU (a class, because `Lock` is non-copyable and cannot be an array element).
    private final class Shard: Sendable {
        let state = Lock(ShardState())
    }

    private let shards: [Shard]
    private let capacityPerShard: Int
    private let hitCount = Atomic<Int>(0)
    private let missCount = Atomic<Int>(0)

    /// A cache of at most `capacity` entries (0 disables caching), spread over up to `shardCount` shards.
    init(capacity: Int, shardCount: Int = 8) {
        let shardCount = max(1, min(shardCount, capacity))
        self.capacityPerShard = capacity == 0 ? 0 : (capacity + shardCount - 1) / shardCount
        self.shards = (0..<shardCount).map { _ in Shard() }
    }

    var hits: Int { hitCount.load(ordering: .relaxed) }
    var misses: Int { missCount.load(ordering: .relaxed) }
    var count: Int { shards.reduce(0) { total, shard in total + shard.state.withLock { $0.entries.count } } }

    /// The cached leaf key for `key`, if an entry is usable at `now` for a verification as of `time`.
    /// Entries whose path has expired by `now` are dropped.
    func leafKey(for key: Key, verificationTime time: Date, now: Date) -> ECPublicKey? {
        guard capacityPerShard > 0 else { return nil }
        let found: ECPublicKey? = shards[index(of: key)].state.withLock { shard in
            guard let position = shard.entries.index(forKey: key) else { return nil }
            let cached = shard.entries.values[position]
            guard now <= cached.entry.validUntil else {
                shard.entries.remove(at: position)
                return nil
            }
            guard time >= cached.entry.validFrom, time <= cached.entry.validUntil else { return nil }
            shard.tick &+= 1
            shard.entries.values[position].lastUse = shard.tick
            return cached.entry.leafKey
        }
        if found != nil {
            hitCount.add(1, ordering: .relaxed)
        } else {
            missCount.add(1, ordering: .relaxed)
        }
        return found
    }

    /// Records a validated path, evicting the shard's least recently used entry when it is full.
    func insert(_ entry: Entry, for key: Key, now: Date) {
        guard capacityPerShard > 0, now <= entry.validUntil else { return }
        shards[index(of: key)].state.withLock { shard in
            if shard.entries[key] == nil, shard.entries.count >= capacityPerShard,
                let oldest = shard.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                shard.entries[oldest] = nil
            }
            shard.tick &+= 1
            shard.entries[key] = (entry, shard.tick)
        }
    }

    private func index(of key: Key) -> Int { Int(key.digest[0]) % shards.count }
}
