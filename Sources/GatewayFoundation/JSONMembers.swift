import Foundation

/// The members of one JSON object, found by their keys' UTF-8 bytes (`JSONParser.parseMembers`).
///
/// For the objects read field by field on every call (a JWS payload: ~25 members, ~35 lookups): a
/// `[String: JSONValue]` makes a String per key and runs SipHash for every insert and lookup, which cost more
/// than the rest of the decoding. Here keys stay bytes, hashed a word at a time with a seed drawn once per
/// process (so nobody outside can aim keys at one slot), and compared byte for byte: keys are equal when
/// their bytes are, never by Unicode equivalence. A duplicate key keeps the last value, as `JSONParser` does.
/// Memory is proportional to the input.
public struct JSONMembers: Sendable {
    private struct Member: Sendable {
        var hash: UInt64
        var keyStart: Int
        var keyCount: Int
        var value: JSONValue
    }

    /// The process's hash seed, read once per object.
    private var seed = JSONMembers.processSeed
    /// Every key's bytes, one after the other.
    private var keyBytes: [UInt8] = []
    private var members: [Member] = []
    /// Open addressing over `members`: a member's index + 1, 0 for an empty slot; a power of two at least
    /// twice the member count, so probes stay short.
    private var slots: [Int32] = []

    /// No members.
    public init() {}

    /// The number of distinct keys.
    public var count: Int { members.count }

    /// The value at `key`, nil when absent.
    public subscript(key: String) -> JSONValue? {
        var key = key
        return key.withUTF8 { self[bytes: $0] }
    }

    /// The value at the key spelled by `key`'s bytes, nil when absent.
    public subscript(bytes key: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        guard !members.isEmpty else { return nil }
        return position(of: key, hash: Self.hash(key, seed: seed)).found.map { members[$0].value }
    }

    /// Keeps `value` at `key` (replacing an earlier value of the same key).
    public mutating func set(_ value: JSONValue, forKey key: UnsafeBufferPointer<UInt8>) {
        if slots.isEmpty {
            // Room for a payload's usual ~25 members without growing.
            slots = [Int32](repeating: 0, count: 64)
            members.reserveCapacity(32)
            keyBytes.reserveCapacity(512)
        }
        let hash = Self.hash(key, seed: seed)
        let (found, slot) = position(of: key, hash: hash)
        if let found {
            members[found].value = value
            return
        }
        members.append(Member(hash: hash, keyStart: keyBytes.count, keyCount: key.count, value: value))
        keyBytes.append(contentsOf: key)
        slots[slot] = Int32(members.count)
        if members.count * 2 > slots.count { rebuildSlots(count: slots.count * 2) }
    }

    /// The members as a dictionary (keys decoded as UTF-8, which `JSONParser` validated), for tests and
    /// diagnostics: there, keys are Swift Strings, so two keys that differ in bytes but are canonically
    /// equivalent (NFC and NFD spellings) become one, whose value depends on the order the spellings came in.
    public var dictionary: [String: JSONValue] {
        var dictionary = [String: JSONValue](minimumCapacity: members.count)
        keyBytes.withUnsafeBufferPointer { bytes in
            for member in members {
                let key = String(decoding: bytes[member.keyStart..<member.keyStart + member.keyCount], as: UTF8.self)
                dictionary[key] = member.value
            }
        }
        return dictionary
    }

    /// The member holding `key`, or the empty slot where it would go.
    private func position(of key: UnsafeBufferPointer<UInt8>, hash: UInt64) -> (found: Int?, slot: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        // Members are read in place (no copy of a value, no retain) while probing.
        return keyBytes.withUnsafeBufferPointer { bytes in
            members.withUnsafeBufferPointer { members in
                while true {
                    let entry = Int(slots[slot])
                    if entry == 0 { return (nil, slot) }
                    if members[entry - 1].hash == hash, members[entry - 1].keyCount == key.count,
                        key.count == 0
                            || memcmp(bytes.baseAddress! + members[entry - 1].keyStart, key.baseAddress!, key.count)
                                == 0
                    {
                        return (entry - 1, slot)
                    }
                    slot = (slot + 1) & mask
                }
            }
        }
    }

    private mutating func rebuildSlots(count: Int) {
        slots = [Int32](repeating: 0, count: count)
        let mask = count - 1
        for (index, member) in members.enumerated() {
            var slot = Int(truncatingIfNeeded: member.hash) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(index + 1)
        }
    }

    /// Drawn once per process: key hashes cannot be predicted from outside.
    private static let processSeed = UInt64.random(in: .min ... .max)

    /// `WordHash` of `key` under `seed`, eight bytes at a time (a key of 8 bytes or more ends with its last
    /// eight, overlapping; a shorter one is one word).
    @inline(__always)
    static func hash(_ key: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        var hash = WordHash(seed: seed, length: key.count)
        guard let base = key.baseAddress else { return hash.value }
        let raw = UnsafeRawPointer(base)
        if key.count < 8 {
            var word: UInt64 = 0
            for index in 0..<key.count { word = word << 8 | UInt64(base[index]) }
            hash.mix(word)
        } else {
            var offset = 0
            while offset + 8 < key.count {
                hash.mix(raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            hash.mix(raw.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self))
        }
        return hash.value
    }
}

extension JSONMembers {
    /// `data` parsed as one JSON object; nil when it is not valid JSON or not an object.
    public init?(parsing data: Data) {
        let parsed = data.withUnsafeBytes { JSONParser.parseMembers($0.assumingMemoryBound(to: UInt8.self)) }
        guard let parsed else { return nil }
        self = parsed
    }
}
