import Testing

@testable import GatewayFoundation

@Suite struct Base64Tests {
    @Test func strictURLSafe() {
        #expect(Base64.decode("aGVsbG8", variant: .urlSafeUnpadded) == Array("hello".utf8))
        #expect(Base64.decode("aGVsbG8=", variant: .urlSafeUnpadded) == nil)
        #expect(Base64.decode("a+8", variant: .urlSafeUnpadded) == nil)
        #expect(Base64.decode("-_8", variant: .urlSafeUnpadded) == [0xFB, 0xFF])
        #expect(Base64.decode("aGVsbG9", variant: .urlSafeUnpadded) == nil, "non-zero trailing bits")
        #expect(Base64.decode("a", variant: .urlSafeUnpadded) == nil)
        #expect(Base64.decode("aGVs bG8", variant: .urlSafeUnpadded) == nil)
    }

    @Test func strictStandard() {
        #expect(Base64.decode("aGVsbG8=", variant: .standard) == Array("hello".utf8))
        #expect(Base64.decode("aGVsbG8", variant: .standard) == nil)
        #expect(Base64.decode("aGVsbG8==", variant: .standard) == nil)
        #expect(Base64.decode("-_8A", variant: .standard) == nil)
        #expect(Base64.decode("+/8A", variant: .standard) == [0xFB, 0xFF, 0x00])
        #expect(Base64.decode("aG=s", variant: .standard) == nil)
    }

    @Test func encodeRoundTrips() {
        for length in 0..<20 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 250) }
            for variant in [Base64.Variant.standard, .standardUnpadded, .urlSafeUnpadded] {
                #expect(Base64.decode(Base64.encode(bytes, variant: variant), variant: variant) == bytes)
            }
        }
    }

    /// Strictness means one text per byte string: whatever decodes re-encodes to exactly the same text,
    /// and `isValid` agrees with `decode` (the chain cache keys on x5c text relying on this).
    @Test func decodingIsCanonicalAndIsValidAgrees() {
        let symbols = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_= .".utf8)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<4000 {
            let length = Int.random(in: 0...13, using: &generator)
            let text = String(
                decoding: (0..<length).map { _ in
                    Int.random(in: 0..<4, using: &generator) == 0
                        ? symbols[Int.random(in: 62..<symbols.count, using: &generator)]
                        : symbols[Int.random(in: 0..<62, using: &generator)]
                }, as: UTF8.self)
            for variant in [Base64.Variant.standard, .standardUnpadded, .urlSafeUnpadded] {
                let decoded = Base64.decode(text, variant: variant)
                #expect(Base64.isValid(text, variant: variant) == (decoded != nil), "\(text)")
                if let decoded {
                    #expect(Base64.encode(decoded, variant: variant) == text, "\(text)")
                    #expect(Base64.isValid(text, variant: variant, minimumCount: decoded.count))
                    #expect(!Base64.isValid(text, variant: variant, minimumCount: decoded.count + 1))
                }
            }
        }
    }
}
