import Cryptography
import Foundation
import Testing

/// RFC 4231 test vectors for HMAC-SHA256.
@Suite struct HMACTests {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func rfc4231Case1() {
        let code = HMACSHA256.authenticationCode(
            key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8))
        #expect(hex(code) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func rfc4231Case2() {
        let code = HMACSHA256.authenticationCode(
            key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hex(code) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(HMACSHA256.isValid(code, key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
        #expect(!HMACSHA256.isValid(code, key: Array("Jeff".utf8), message: Array("what do ya want for nothing?".utf8)))
        #expect(!HMACSHA256.isValid(Array(code.dropLast()), key: Array("Jefe".utf8), message: []))
    }
}
