import Cryptography
import Foundation
import SignedData

/// `verify-benchmark JWS_FILE ROOT_CERT [SECONDS]`: in-process VerifyJWS throughput (no gRPC), one thread,
/// warm chain cache, no verified-signature cache (every call pays its ECDSA, the figure compared with OpenSSL's).
/// Prints verifications per second; bench/verify.sh compares it with `openssl speed`.
@main
struct VerifyBenchmark {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else {
            FileHandle.standardError.write(Data("usage: verify-benchmark JWS_FILE ROOT_CERT [SECONDS]\n".utf8))
            exit(2)
        }
        let jws = try String(contentsOfFile: arguments[1], encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let root = try Certificate(contentsOfFile: arguments[2])
        let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 3 : 3
        var configuration = SignedDataVerifier.Configuration(trustedRoots: [root])
        configuration.signatureCacheCapacity = 0
        let verifier = try SignedDataVerifier(configuration: configuration)

        let first = verifier.verify(jws)
        guard first.status == .ok else {
            FileHandle.standardError.write(Data("the sample does not verify: \(first.message)\n".utf8))
            exit(1)
        }
        var decodedFields = 0
        let start = Date()
        var count = 0
        while Date().timeIntervalSince(start) < seconds {
            for _ in 0..<100 {
                let result = verifier.verify(jws)
                if result.status == .ok, PayloadDecoder.decode(result) != nil { decodedFields += 1 }
            }
            count += 100
        }
        let elapsed = Date().timeIntervalSince(start)
        precondition(decodedFields == count, "every verification must succeed")
        print(String(format: "%.0f", Double(count) / elapsed))
    }
}
