/// A multiply–xor hash fed eight bytes at a time, for in-memory tables whose hits are confirmed by comparing
/// the bytes themselves: fast, not a hash anyone may rely on. Seed it (once per process) when the keys come
/// from outside, so nobody can aim them at one slot.
public struct WordHash {
    @usableFromInline static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
    @usableFromInline var state: UInt64

    /// A hash of `length` bytes, whose words `mix` then takes.
    @inlinable
    public init(seed: UInt64 = 0, length: Int) {
        state = seed ^ (UInt64(truncatingIfNeeded: length) &* Self.multiplier)
    }

    /// Takes the next word.
    @inlinable
    public mutating func mix(_ word: UInt64) {
        state = (state ^ word) &* Self.multiplier
        state ^= state >> 29
    }

    /// The hash of the words taken so far.
    @inlinable
    public var value: UInt64 { (state ^ (state >> 32)) &* Self.multiplier }
}
