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

    @Test func directDEREncodingMatchesOpenSSLs() throws {
        var cases: [[UInt8]] = [
            [UInt8](repeating: 0, count: 64), [UInt8](repeating: 0xFF, count: 64),
            [UInt8](repeating: 0, count: 31) + [1] + [0x80] + [UInt8](repeating: 0, count: 31),
            [0, 0, 0x7F] + [UInt8](repeating: 0x11, count: 29) + [0, 0x80] + [UInt8](repeating: 0, count: 30),
            [UInt8](repeating: 0x80, count: 96), [7, 9],
        ]
        for _ in 0..<200 {
            cases.append((0..<64).map { _ in UInt8.random(in: 0...3) == 0 ? 0 : UInt8.random(in: 0...255) })
        }
        for raw in cases {
            #expect(ECDSA.derSignatureDirect(fromRaw: raw) == ECDSA.derSignature(fromRaw: raw), "\(raw)")
        }
        #expect(ECDSA.derSignatureDirect(fromRaw: []) == nil)
        #expect(ECDSA.derSignatureDirect(fromRaw: [1, 2, 3]) == nil)
        #expect(ECDSA.derSignatureDirect(fromRaw: [UInt8](repeating: 1, count: 122)) == nil)  // beyond P-384
    }

    @Test func zeroAndOutOfRangeScalarsAreRejected() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let message = Array("m".utf8)
        let raw = try key.signature(for: message)
        let publicKey = try key.publicKey
        let zero = [UInt8](repeating: 0, count: 32)
        let huge = [UInt8](repeating: 0xFF, count: 32)
        #expect(publicKey.isValidSignature(raw, for: message))
        #expect(!publicKey.isValidSignature(zero + raw[32...], for: message))
        #expect(!publicKey.isValidSignature(Array(raw[..<32]) + zero, for: message))
        #expect(!publicKey.isValidSignature(huge + raw[32...], for: message))
        #expect(!publicKey.isValidSignature(Array(raw[..<32]) + huge, for: message))
        #expect(!publicKey.isValidSignature(zero + zero, for: message))
    }

    @Test func concurrentVerificationsShareOneKey() async throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try key.publicKey
        let message = Array("concurrent".utf8)
        let raw = try key.signature(for: message)
        var bad = raw
        bad[40] ^= 1
        let wrong = bad
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<200).allSatisfy { i in
                        (i + task) % 2 == 0
                            ? publicKey.isValidSignature(raw, for: message)
                            : !publicKey.isValidSignature(wrong, for: message)
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0 })
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
        #expect(throws: CryptographyError.self) {
            try ECPrivateKey(pkcs8PEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        do {
            _ = try ECPublicKey(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01])
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(CryptographyError.drainErrorQueue().isEmpty, "the error queue was drained into the error")
        }
    }
}
