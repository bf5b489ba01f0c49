import Foundation

@testable import AppStoreDomain
@testable import CallerAuthentication
@testable import Configuration
@testable import Cryptography
@testable import GatewayFoundation

/// Caller authentication from hostile bytes: an input starting with `{` is a JWKS document; anything else an
/// `authorization` value checked against keys generated at start (RS256 and ES256), at a fixed time.
private let setup: (CallerAuthenticator, JSONWebKeySet) = {
    guard let rsa = try? RSAPrivateKey(generatingBits: 2048), let ec = try? ECPrivateKey(generatingOn: .p256),
        let point = (try? ec.publicKey)?.p256Coordinates
    else { preconditionFailure("key generation failed") }
    let jwks = """
        {"keys":[{"kty":"RSA","kid":"r","n":"\(Base64URL.encode(rsa.modulus))","e":"\(Base64URL.encode(rsa.exponent))"},
        {"kty":"EC","kid":"e","crv":"P-256","x":"\(Base64URL.encode(point.x))","y":"\(Base64URL.encode(point.y))"}]}
        """
    guard let keys = try? JSONWebKeySet(json: Array(jwks.utf8)) else { preconditionFailure("the JWKS does not parse") }
    let authenticator = CallerAuthenticator(
        verifier: BearerTokenVerifier(issuer: "https://issuer", audiences: ["appstore-gateway"]),
        policy: CallerPolicy(callers: [.init(identity: "system:serviceaccount:a:b", apps: ["*"])], apps: []),
        clock: ManualClock(wall: WallTime(millisecondsSince1970: 1_750_000_000_000)), cacheCapacity: 64)
    authenticator.replaceKeys(keys)
    return (authenticator, keys)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBearer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if bytes.first == UInt8(ascii: "{") {
        _ = try? JSONWebKeySet(json: bytes)
    } else {
        let text = String(decoding: bytes, as: UTF8.self)
        _ = setup.0.authenticate(authorization: text)
        _ = setup.0.authenticate(authorization: "Bearer " + text)
    }
    return 0
}
