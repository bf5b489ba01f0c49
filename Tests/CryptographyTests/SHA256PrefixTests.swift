import Foundation
import Testing

@testable import Cryptography

/// A prefix hashed once, then many suffixes: each digest is SHA-256 of the whole, and verifying over such a
/// digest agrees with verifying over the message (pooled verification contexts, from many threads at once).
@Suite struct SHA256PrefixTests {
    @Test(arguments: [0, 1, 63, 64, 65, 4_412])
    func aPrefixDigestIsTheWholeMessagesDigest(prefixLength: Int) throws {
        let message = (0..<(prefixLength + 900)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let prefix = try #require(SHA256Prefix(Array(message[..<prefixLength])))
        for _ in 0..<3 {  // the absorbed state is never consumed
            let digest = message[prefixLength...].withUnsafeBytes { Array($0) }.withUnsafeBytes {
                prefix.digest(appending: $0)
            }
            #expect(digest == SHA256.hash(message))
        }
    }

    @Test func aSignatureVerifiesOverTheDigestAsOverTheMessage() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try key.publicKey
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ".utf8)
        let signature = try key.signature(for: message)
        let digest = SHA256.hash(message)
        #expect(publicKey.isValidSignature(signature, forDigest: digest))
        var tampered = digest
        tampered[0] ^= 1
        #expect(!publicKey.isValidSignature(signature, forDigest: tampered))
        #expect(!publicKey.isValidSignature(signature, forDigest: Array(digest.prefix(31))))  // wrong length
        #expect(!publicKey.isValidSignature(Array(signature.prefix(63)), forDigest: digest))
    }

    /// More verifications at once than the idle pool keeps: every answer is right, good and bad alike.
    @Test func concurrentVerificationsShareThePooledContexts() async throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try key.publicKey
        let message = Array("m".utf8)
        let signature = try key.signature(for: message)
        let wrong = signature.enumerated().map { $0.offset == 40 ? $0.element ^ 1 : $0.element }
        let answers = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<(4 * ECVerificationContext.maximumIdleContexts) {
                group.addTask {
                    let good = index % 3 != 0
                    return publicKey.isValidSignature(good ? signature : wrong, for: message) == good
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(answers.count == 32 && answers.allSatisfy { $0 })
    }
}
