import GatewayFoundation
import Testing

@Suite struct WordHashTests {
    private func hash(_ words: [UInt64], seed: UInt64 = 0, length: Int) -> UInt64 {
        var hash = WordHash(seed: seed, length: length)
        for word in words { hash.mix(word) }
        return hash.value
    }

    @Test func theSameWordsGiveTheSameValueAndEachInputChangesIt() {
        let base = hash([1, 2, 3], length: 24)
        #expect(hash([1, 2, 3], length: 24) == base)
        #expect(hash([1, 2, 4], length: 24) != base)
        #expect(hash([2, 1, 3], length: 24) != base)
        #expect(hash([1, 2, 3], length: 23) != base)
        #expect(hash([1, 2, 3], seed: 7, length: 24) != base)
        // Zero words leave a zero state as it is: the length tells runs of zeros apart.
        #expect(hash([0], length: 8) != hash([0, 0], length: 16))
    }
}
