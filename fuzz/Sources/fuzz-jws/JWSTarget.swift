import Foundation

@testable import Cryptography
@testable import SignedData

/// Compact JWS parsing, x5c chain building and payload decoding against Apple's real root, at a fixed time.
private let verifier: SignedDataVerifier = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("certs/AppleRootCA-G3.cer")
    guard let der = try? Data(contentsOf: root), let certificate = try? Certificate(derEncoded: Array(der)) else {
        preconditionFailure("certs/AppleRootCA-G3.cer is missing or unreadable")
    }
    guard let verifier = try? SignedDataVerifier(configuration: .init(trustedRoots: [certificate]), clock: FixedClock())
    else { preconditionFailure("the verifier rejects Apple's root") }
    return verifier
}()

private struct FixedClock: VerificationClock {
    func now() -> Date { Date(timeIntervalSince1970: 1_735_689_600) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = verifier.verify(String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self))
    return 0
}
