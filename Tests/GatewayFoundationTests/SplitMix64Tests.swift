import GatewayFoundation
import Testing

@Suite struct SplitMix64Tests {
    /// The reference implementation's first outputs (Vigna's splitmix64.c): seeds kept by the simulator, the
    /// benchmarks and the property tests replay only while these stay.
    @Test func drawsTheReferenceSequence() {
        var zero = SplitMix64(seed: 0)
        #expect(
            [zero.next(), zero.next(), zero.next()] == [
                0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F,
            ])
        var seeded = SplitMix64(seed: 0x5eed_0046)
        #expect(
            [seeded.next(), seeded.next(), seeded.next()] == [
                0x19D3_3555_55B3_A827, 0x847D_1B5C_8E44_1B46, 0x8816_2D24_F676_0E17,
            ])
    }
}
