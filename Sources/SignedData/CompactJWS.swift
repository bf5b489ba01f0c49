import Cryptography
import Foundation
import GatewayFoundation

/// A compact-serialized JWS (RFC 7515 §7.1) split and decoded, with the header fields Apple uses.
/// Nothing here is authenticated yet.
struct CompactJWS: Sendable {
    /// The compact text as received (kept, not copied): its first `signingInputCount` bytes,
    /// `BASE64URL(header) "." BASE64URL(payload)`, are what the signature covers.
    private let text: String
    private let signingInputCount: Int
    let payload: Data
    let signature: [UInt8]
    let header: JWSHeader

    /// The `x5c` entries as sent (standard base64 DER).
    var certificateChain: [String] { header.certificateChain }

    /// SHA-256 of the signing input, the digest an ES256 signature signs: only the payload's part is hashed
    /// when the header's prefix state is at hand.
    func signingInputDigest() -> [UInt8] {
        var text = text
        return text.withUTF8 { bytes in
            let input = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[..<signingInputCount])
            if let prefix = header.signingPrefix, input.count > header.text.count,
                let digest = prefix.digest(appending: .init(rebasing: input[(header.text.count + 1)...]))
            {
                return digest
            }
            return SHA256.hash(input)
        }
    }

    /// Whether `signature` signs the signing input whose SHA-256 is `digest` under `key` (ES256: the verifier
    /// accepts only a P-256 leaf key before it gets here).
    func signatureVerifies(under key: ECPublicKey, digest: [UInt8]) -> Bool {
        key.isValidSignature(signature, forDigest: digest)
    }

    /// Parses `text`, rejecting anything but three unpadded base64url parts with a JSON object header.
    /// A header kept in `headers` is neither decoded nor parsed again; one parsed here is kept there.
    init(parsing text: String, maximumLength: Int, headers: JWSHeaderMemo? = nil) throws(Rejection) {
        let length = text.utf8.count
        guard length <= maximumLength else {
            throw Rejection(
                .malformed, "the JWS is \(length) bytes, more than the configured limit of \(maximumLength)")
        }
        var text = text
        typealias Parts = (
            header: Result<JWSHeader, Rejection>, kept: Bool, payload: [UInt8], signature: [UInt8], signedCount: Int
        )
        // withUTF8 rethrows untyped errors, so the closure returns a Result to keep `throws(Rejection)`.
        let parts = try text.withUTF8 { bytes in
            Result { () throws(Rejection) -> Parts in
                // One pass for the dots (libc's vectorised memchr): the first two positions and how many.
                var dots = (first: -1, second: -1)
                var dotCount = 0
                if let base = bytes.baseAddress {
                    var from = 0
                    while from < bytes.count,
                        let found = memchr(base + from, Int32(UInt8(ascii: ".")), bytes.count - from)
                    {
                        let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                        if dotCount == 0 { dots.first = index } else if dotCount == 1 { dots.second = index }
                        dotCount += 1
                        from = index + 1
                    }
                }
                guard dotCount == 2 else {
                    throw Rejection(.malformed, "a compact JWS has 3 dot-separated parts; this one has \(dotCount + 1)")
                }
                func decode(_ range: Range<Int>, _ name: String) throws(Rejection) -> [UInt8] {
                    guard !range.isEmpty,
                        let decoded = Base64.decode(
                            ascii: UnsafeBufferPointer(rebasing: bytes[range]), variant: .urlSafeUnpadded)
                    else { throw Rejection(.malformed, "the JWS \(name) is not unpadded base64url") }
                    return decoded
                }
                // The same checks in the same order as without the memo: the three parts' base64url, then
                // the header's JSON (a kept header passed both).
                let headerText = UnsafeBufferPointer(rebasing: bytes[0..<dots.first])
                let kept = headers?.header(for: headerText)
                let headerBytes = kept == nil ? try decode(0..<dots.first, "header") : []
                let payload = try decode(dots.first + 1..<dots.second, "payload")
                let signature = try decode(dots.second + 1..<bytes.count, "signature")
                let header =
                    kept.map { Result.success($0) }
                    ?? Result { () throws(Rejection) in try JWSHeader(text: Array(headerText), decoded: headerBytes) }
                return (header, kept != nil, payload, signature, dots.second)
            }
        }.get()
        header = try parts.header.get()
        if !parts.kept { headers?.keep(header) }
        payload = Data(parts.payload)
        signature = parts.signature
        self.text = text
        signingInputCount = parts.signedCount
    }

    /// The payload of `text` without looking at its header or signature: for data nobody can verify (Xcode's),
    /// still bounded by `maximumLength` and required to be three parts with a base64url payload.
    static func unverifiedPayload(of text: String, maximumLength: Int) throws(Rejection) -> Data {
        let length = text.utf8.count
        guard length <= maximumLength else {
            throw Rejection(
                .malformed, "the JWS is \(length) bytes, more than the configured limit of \(maximumLength)")
        }
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw Rejection(.malformed, "a compact JWS has 3 dot-separated parts; this one has \(parts.count)")
        }
        guard !parts[1].isEmpty,
            let payload = Array(parts[1]).withUnsafeBufferPointer({
                Base64.decode(ascii: $0, variant: .urlSafeUnpadded)
            })
        else { throw Rejection(.malformed, "the JWS payload is not unpadded base64url") }
        return Data(payload)
    }

    /// The DER bytes of `x5c[index]` (standard base64, RFC 7515 §4.1.6).
    func certificateDER(at index: Int) throws(Rejection) -> [UInt8] {
        guard let der = Base64.decode(certificateChain[index], variant: .standard), !der.isEmpty else {
            throw Self.notBase64(index)
        }
        return der
    }

    /// Throws exactly when `certificateDER(at:)` would for the first of the three that fails, without decoding.
    func checkCertificateTexts() throws(Rejection) {
        if let index = header.firstInvalidCertificate { throw Self.notBase64(index) }
    }

    private static func notBase64(_ index: Int) -> Rejection {
        Rejection(.invalidCertificate, "x5c[\(index)] is not standard base64")
    }
}

/// A JWS header that parsed: `alg` ES256 and three `x5c` strings, with what the verifier derives from them.
struct JWSHeader: Sendable {
    /// The header's base64url text, as sent.
    let text: [UInt8]
    /// The `x5c` entries as sent (standard base64 DER).
    let certificateChain: [String]
    /// The first `x5c` entry that is not strict standard base64, if any.
    let firstInvalidCertificate: Int?
    /// The chain cache's key for the leaf and intermediate texts.
    let chainKey: ChainCache.Key
    /// SHA-256 of `text` and the dot that follows it: the signing input's digest then costs only its payload.
    let signingPrefix: SHA256Prefix?

    /// Parses the decoded header JSON `decoded` whose base64url text is `text`.
    init(text: [UInt8], decoded: [UInt8]) throws(Rejection) {
        guard let header = JSONValue.object(from: Data(decoded)) else {
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
                .invalidChainLength,
                "x5c holds \(chain.count) certificates; Apple sends exactly 3 (leaf, intermediate, root)")
        }
        self.text = text
        certificateChain = chain
        // x5c[2] must be well-formed too, but is never trusted.
        firstInvalidCertificate = chain.indices.first {
            !Base64.isValid(chain[$0], variant: .standard, minimumCount: 1)
        }
        chainKey = ChainCache.Key(leafText: chain[0].utf8, intermediateText: chain[1].utf8)
        signingPrefix = SHA256Prefix(text + [UInt8(ascii: ".")])
    }
}
