import Cryptography
import GatewayFoundation
import Synchronization

/// JWS whose ES256 signature verified, so a JWS seen again costs no ECDSA.
///
/// Keyed by SHA-256(SHA-256(signing input) ‖ signature bytes). The signing input holds the header, with the
/// `x5c` chain whose leaf key verified the signature, and the payload; so an entry states a fact about those
/// bytes alone ("this signature verifies over this signing input under its own leaf key"), true whatever the
/// settings, clock, app or environment. The inner digest is the one ES256 verifies anyway (its header part
/// kept from earlier JWS of the same header), so a key costs the payload's hashing and one more block, not a
/// hash of the whole 5 KB JWS. Everything
/// that can change between two verifications of the same JWS (the chain's trust at the verification time, OCSP
/// status, kind, bundle id, app Apple id, environment) is checked again on every call, from the chain and
/// revocation caches. Only verified signatures are kept; a failed one is verified again (and costs again).
///
/// Bounded: at most `capacity` digests of 32 bytes (with the sets' slots, about 64 bytes an entry; the
/// default 4,096 entries hold about 256 KiB). Sharded by the digest's first byte; each shard keeps two
/// generations, a lookup promoting from the older to the newer one, and drops its older generation when the
/// newer one fills half the shard: least recently used entries go first, at O(1) per lookup and insert.
final class VerifiedSignatureCache: Sendable {
    /// A SHA-256 digest held inline (no heap array per key).
    struct Key: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        /// The key of a signature over the signing input whose SHA-256 is `signingInputDigest`.
        init(signingInputDigest: [UInt8], signature: [UInt8]) {
            let count = signingInputDigest.count + signature.count
            // The two parts side by side in a temporary buffer (on the stack for an ES256 signature).
            let digest = withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
                buffer.copyBytes(from: signingInputDigest)
                UnsafeMutableRawBufferPointer(rebasing: buffer[signingInputDigest.count...]).copyBytes(from: signature)
                return SHA256.hash(UnsafeRawBufferPointer(buffer))
            }
            self.init(digest: digest)
        }

        init(digest: [UInt8]) {
            precondition(digest.count == 32, "a SHA-256 digest is 32 bytes")
            func word(_ at: Int) -> UInt64 {
                digest[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) }
            }
            words = (word(0), word(8), word(16), word(24))
        }

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.words == rhs.words }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    private struct Generations {
        var newer: Set<Key> = []
        var older: Set<Key> = []
    }

    /// One lock and its two generations (a class, because `Lock` is non-copyable).
    private final class Shard: Sendable {
        let state = Lock(Generations())
    }

    private let shards: [Shard]
    /// Entries of a shard's newer generation before it becomes the older one.
    private let generationSize: Int
    private let hitCount = Atomic<Int>(0)
    private let missCount = Atomic<Int>(0)

    /// A cache of at most `capacity` entries (0 disables it), spread over up to `shardCount` shards.
    init(capacity: Int, shardCount: Int = 8) {
        let capacity = max(0, capacity)
        let shardCount = max(1, min(shardCount, capacity / 2))
        // Two generations per shard: their sum never passes capacity / shardCount.
        generationSize = capacity / shardCount / 2
        shards = (0..<shardCount).map { _ in Shard() }
    }

    /// Whether the cache keeps anything.
    var isEnabled: Bool { generationSize > 0 }
    /// Most entries held at once.
    var capacity: Int { generationSize * 2 * shards.count }
    var hits: Int { hitCount.load(ordering: .relaxed) }
    var misses: Int { missCount.load(ordering: .relaxed) }
    var count: Int {
        shards.reduce(0) { total, shard in total + shard.state.withLock { $0.newer.count + $0.older.count } }
    }

    /// Whether the signature of the JWS with `key` verified before (a use keeps it).
    func contains(_ key: Key) -> Bool {
        guard isEnabled else { return false }
        let found = shard(of: key).state.withLock { state in
            if state.newer.contains(key) { return true }
            guard state.older.remove(key) != nil else { return false }
            Self.add(key, to: &state, generationSize: generationSize)
            return true
        }
        if found {
            hitCount.add(1, ordering: .relaxed)
        } else {
            missCount.add(1, ordering: .relaxed)
        }
        return found
    }

    /// Records that the signature of the JWS with `key` verified.
    func insert(_ key: Key) {
        guard isEnabled else { return }
        shard(of: key).state.withLock { state in
            guard !state.newer.contains(key) else { return }
            state.older.remove(key)
            Self.add(key, to: &state, generationSize: generationSize)
        }
    }

    private static func add(_ key: Key, to state: inout Generations, generationSize: Int) {
        if state.newer.count >= generationSize {
            state.older = state.newer
            state.newer = Set(minimumCapacity: generationSize)
        }
        state.newer.insert(key)
    }

    private func shard(of key: Key) -> Shard { shards[Int(key.words.0 >> 56) % shards.count] }
}
