import GatewayFoundation

/// SplitMix64 (GatewayFoundation's) in named streams: a tiny, fast generator whose whole output is fixed by its
/// seed, so one seed always produces the same customers, ids and dates (and the same fault decisions).
struct DeterministicRandom: RandomNumberGenerator, Sendable {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// A generator for one named stream of `seed`, independent of the other streams.
    init(seed: UInt64, stream: String) {
        var mixed = seed ^ 0x9E37_79B9_7F4A_7C15
        for byte in stream.utf8 { mixed = (mixed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        generator = SplitMix64(seed: mixed)
    }

    mutating func next() -> UInt64 { generator.next() }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    /// A uniformly chosen integer in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// A uniformly chosen element.
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }

    /// A lowercase RFC 4122 version-4 UUID string.
    mutating func uuid() -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &self) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(
            separator: "-")
    }
}
