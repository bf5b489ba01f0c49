import Testing

@testable import Cryptography

@Suite struct ECKeyTests {
    @Test func es256RoundTripIsRaw64Bytes() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let message = Array("header.payload".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        let publicKey = try key.publicKey
        #expect(publicKey.isValidSignature(signature, for: message))
        #expect(!publicKey.isValidSignature(signature, for: Array("header.payloae".utf8)))
        var flipped = signature
        flipped[10] ^= 0x01
        #expect(!publicKey.isValidSignature(flipped, for: message))
    }

    @Test func derSignatureAndWrongLengthsAreRejected() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let message = Array("m".utf8)
        let raw = try key.signature(for: message)
        let der = try #require(ECDSA.derSignature(fromRaw: raw))
        let publicKey = try key.publicKey
        #expect(!publicKey.isValidSignature(der, for: message))
        #expect(!publicKey.isValidSignature(Array(raw.dropLast()), for: message))
        #expect(!publicKey.isValidSignature([], for: message))
        #expect(!publicKey.isValidSignature(raw + [0], for: message))
    }

    @Test func p384SignaturesAre96Bytes() throws {
        let key = try ECPrivateKey(generatingOn: .p384)
        let signature = try key.signature(for: [1, 2, 3])
        #expect(signature.count == 96)
        #expect(try key.publicKey.isValidSignature(signature, for: [1, 2, 3]))
    }

    @Test func pkcs8AndPublicKeyRoundTrip() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try ECPrivateKey(pkcs8PEM: pem)
        #expect(reloaded.curve == .p256)
        #expect(try reloaded.publicKey == key.publicKey)
        let publicPEM = try key.publicKey.pemRepresentation()
        #expect(try ECPublicKey(pem: publicPEM) == key.publicKey)
        #expect(try ECPublicKey(derEncoded: key.publicKeyDER()) == key.publicKey)
        let signature = try reloaded.signature(for: [9])
        #expect(try ECPublicKey(pem: publicPEM).isValidSignature(signature, for: [9]))
    }

    @Test func invalidKeysThrowTypedErrors() throws {
        #expect(throws: CryptographyError.self) { try ECPrivateKey(pkcs8PEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        do {
            _ = try ECPublicKey(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01])
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(CryptographyError.drainErrorQueue().isEmpty, "the error queue was drained into the error")
        }
    }
}

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
            for variant in [Base64.Variant.standard, .urlSafeUnpadded] {
                #expect(Base64.decode(Base64.encode(bytes, variant: variant), variant: variant) == bytes)
            }
        }
    }
}
