/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, fast generator whose whole output is fixed by its seed, for
/// what must replay from a seed (the simulator's customers and faults, seeded benchmark data, the shuffles of
/// property tests). Its outputs are a contract: seeds written down elsewhere depend on them. Never use it for
/// anything that must be unpredictable (`FastRandom`, `SystemRandomNumberGenerator`).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// The generator whose draws `seed` fixes.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
