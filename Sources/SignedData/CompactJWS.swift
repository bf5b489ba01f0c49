import Cryptography
import Foundation

/// A compact-serialized JWS (RFC 7515 §7.1) split and decoded, with the header fields Apple uses.
/// Nothing here is authenticated yet.
struct CompactJWS: Sendable {
    /// `BASE64URL(header) "." BASE64URL(payload)`, the bytes the signature covers.
    let signingInput: [UInt8]
    let payload: Data
    let signature: [UInt8]
    let algorithm: String
    /// The `x5c` entries as sent (standard base64 DER).
    let certificateChain: [String]

    /// Parses `text`, rejecting anything but three unpadded base64url parts with a JSON object header.
    init(parsing text: String, maximumLength: Int) throws(Rejection) {
        let length = text.utf8.count
        guard length <= maximumLength else {
            throw Rejection(.malformed, "the JWS is \(length) bytes, more than the configured limit of \(maximumLength)")
        }
        var bytes = Array(text.utf8)
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw Rejection(.malformed, "a compact JWS has 3 dot-separated parts; this one has \(dots.count + 1)")
        }
        func decode(_ range: Range<Int>, _ name: String) throws(Rejection) -> [UInt8] {
            guard !range.isEmpty, let decoded = Base64.decode(asciiBytes: bytes[range], variant: .urlSafeUnpadded) else {
                throw Rejection(.malformed, "the JWS \(name) is not unpadded base64url")
            }
            return decoded
        }
        let headerBytes = try decode(0..<dots[0], "header")
        payload = Data(try decode(dots[0] + 1..<dots[1], "payload"))
        signature = try decode(dots[1] + 1..<bytes.count, "signature")
        bytes.removeSubrange(dots[1]...)
        signingInput = bytes

        guard let header = JSONValue.object(from: Data(headerBytes)) else {
            throw Rejection(.malformed, "the JWS header is not a JSON object")
        }
        guard let algorithm = header["alg"]?.string else {
            throw Rejection(.malformed, "the JWS header has no string \"alg\"")
        }
        guard algorithm == "ES256" else {
            // Echo at most 32 characters of the attacker-chosen value.
            throw Rejection(
                .unsupportedAlgorithm, "alg is \"\(algorithm.prefix(32))\"; App Store data is signed with ES256 only")
        }
        guard case .array(let entries)? = header["x5c"] else {
            throw Rejection(.malformed, "the JWS header has no \"x5c\" certificate array")
        }
        var chain: [String] = []
        for entry in entries {
            guard let certificate = entry.string else {
                throw Rejection(.malformed, "an \"x5c\" entry is not a string")
            }
            chain.append(certificate)
        }
        guard chain.count == 3 else {
            throw Rejection(
                .invalidChainLength, "x5c holds \(chain.count) certificates; Apple sends exactly 3 (leaf, intermediate, root)")
        }
        self.algorithm = algorithm
        self.certificateChain = chain
    }

    /// The DER bytes of `x5c[index]` (standard base64, RFC 7515 §4.1.6).
    func certificateDER(at index: Int) throws(Rejection) -> [UInt8] {
        guard let der = Base64.decode(certificateChain[index], variant: .standard), !der.isEmpty else {
            throw Self.notBase64(index)
        }
        return der
    }

    /// Throws exactly when `certificateDER(at:)` would, without decoding.
    func checkCertificateText(at index: Int) throws(Rejection) {
        guard Base64.isValid(certificateChain[index], variant: .standard, minimumCount: 1) else {
            throw Self.notBase64(index)
        }
    }

    private static func notBase64(_ index: Int) -> Rejection {
        Rejection(.invalidCertificate, "x5c[\(index)] is not standard base64")
    }
}
