import Synchronization

/// Identifiers that must be unpredictable enough to be unique, not secret (trace and span ids, request
/// ids), at the cost of an atomic add instead of a `getrandom` system call per value.
///
/// A wyrand generator: its state only ever advances by a fixed odd constant, so threads can share it
/// through one atomic add; each value is the state mixed by a 128-bit multiply. The state starts from the
/// system's secure generator, so ids differ between processes and runs.
/// Never use it for keys, nonces or anything an attacker must not guess.
public struct FastRandom: RandomNumberGenerator, Sendable {
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))
    private static let increment: UInt64 = 0xa076_1d64_78bd_642f
    private static let mixer: UInt64 = 0xe703_7ed1_a0b4_28db

    public init() {}

    public mutating func next() -> UInt64 {
        let seed = Self.state.wrappingAdd(Self.increment, ordering: .relaxed).newValue
        return Self.mix(seed, seed ^ Self.mixer)
    }

    /// The wyrand mix: both halves of the 128-bit product, folded.
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }
}
