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
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw Rejection(.malformed, "a compact JWS has 3 dot-separated parts; this one has \(parts.count)")
        }
        func decode(_ part: Substring.UTF8View.SubSequence, _ name: String) throws(Rejection) -> [UInt8] {
            guard !part.isEmpty, let bytes = Base64.decode(Substring(part), variant: .urlSafeUnpadded) else {
                throw Rejection(.malformed, "the JWS \(name) is not unpadded base64url")
            }
            return bytes
        }
        let headerBytes = try decode(parts[0], "header")
        payload = Data(try decode(parts[1], "payload"))
        signature = try decode(parts[2], "signature")
        signingInput = Array(text.utf8[parts[0].startIndex..<parts[1].endIndex])

        guard let header = JSONValue.object(from: Data(headerBytes)) else {
            throw Rejection(.malformed, "the JWS header is not a JSON object")
        }
        guard let algorithm = header["alg"]?.string else {
            throw Rejection(.malformed, "the JWS header has no string \"alg\"")
        }
        guard algorithm == "ES256" else {
            throw Rejection(.unsupportedAlgorithm, "alg is \"\(algorithm)\"; App Store data is signed with ES256 only")
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
            throw Rejection(.invalidCertificate, "x5c[\(index)] is not standard base64")
        }
        return der
    }
}
