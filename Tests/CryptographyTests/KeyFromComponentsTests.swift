import Testing

@testable import Cryptography

/// Public keys built by OpenSSL from their components (a JWK's n/e or x/y), no DER written by hand.
@Suite struct KeyFromComponentsTests {
    @Test func anRSAKeyFromItsModulusAndExponentVerifiesItsPrivateKeysSignatures() throws {
        let privateKey = try RSAPrivateKey(generatingBits: 2048)
        let publicKey = try RSAPublicKey(modulus: [0, 0] + privateKey.modulus, exponent: privateKey.exponent)
        #expect(publicKey.modulusByteCount == 256)
        let message = Array("signed".utf8)
        let signature = try privateKey.rs256Signature(for: message)
        #expect(publicKey.isValidRS256Signature(signature, for: message))
        #expect(!publicKey.isValidRS256Signature(signature, for: Array("altered".utf8)))
        #expect(throws: CryptographyError.self) { try RSAPublicKey(modulus: [0xFF], exponent: [1, 0, 1]) }
        #expect(throws: CryptographyError.self) { try RSAPublicKey(modulus: privateKey.modulus, exponent: [2]) }
    }

    @Test func aP256KeyFromItsCoordinatesRoundTripsAndAPointOffTheCurveIsRefused() throws {
        let privateKey = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try privateKey.publicKey
        let coordinates = try #require(publicKey.p256Coordinates)
        let rebuilt = try ECPublicKey(p256X: coordinates.x, y: coordinates.y)
        #expect(rebuilt == publicKey)
        #expect(rebuilt.p256Coordinates?.x == coordinates.x)
        var offCurve = coordinates.y
        offCurve[31] ^= 1
        #expect(throws: CryptographyError.self) { try ECPublicKey(p256X: coordinates.x, y: offCurve) }
    }
}
