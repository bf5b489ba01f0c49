internal import COpenSSL
import GatewayFoundation

/// An `EVP_MD` fetched once from the default provider, so hashing skips OpenSSL 3's per-call implicit
/// fetch (a method-store lookup under a global lock) that `EVP_sha256()` triggers.
///
/// Owns one fetched `EVP_MD` reference (freed in `deinit`). A fetched digest is immutable and OpenSSL
/// shares it between threads (reference counts are atomic), hence `Sendable`.
final class FetchedDigest: @unchecked Sendable {
    let pointer: OpaquePointer
    let size: Int

    /// Fetches `name`; nil when the provider lacks it.
    init?(_ name: String) {
        guard let fetched = EVP_MD_fetch(nil, name, nil) else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        pointer = fetched
        size = Int(EVP_MD_get_size(fetched))
    }

    deinit { EVP_MD_free(pointer) }

    static let sha256 = FetchedDigest("SHA2-256")
    static let sha384 = FetchedDigest("SHA2-384")

    /// The digest of `bytes` in `output` (at least `size` bytes); false only when OpenSSL fails.
    func hash(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>) -> Bool {
        var length: UInt32 = 0
        let status = EVP_Digest(bytes.baseAddress, bytes.count, output, &length, pointer, nil)
        return status == 1 && Int(length) == size
    }
}

/// A verification-ready `EVP_PKEY_CTX` for one public key: `EVP_PKEY_verify_init` (signature algorithm
/// fetch, key export to the provider) and the digest setting happen once here instead of on every call.
///
/// Owns the template context (freed in `deinit`), which is never used to verify, and up to
/// `maximumIdleContexts` idle copies of it (freed in `deinit`). A verification borrows an idle copy, or makes
/// one with `EVP_PKEY_CTX_dup` (which only reads the template: it up-refs the key, key manager and algorithm
/// atomically and copies the provider's ECDSA context), and gives it back after: verifying leaves nothing in
/// a context that the next verification would see, and a copy is used by one thread at a time, so threads
/// verify concurrently and a warm verification pays no copy (4 µs of a 62 µs P-256 verify), hence `Sendable`.
final class ECVerificationContext: @unchecked Sendable {
    private let template: OpaquePointer
    private let digest: FetchedDigest
    private let idle = Lock(IdleContexts())
    static let maximumIdleContexts = 8

    /// Nil when OpenSSL cannot prepare the context; callers then fall back to `EVP_DigestVerify`.
    init?(key: OpaquePointer, curve: EllipticCurve) {
        guard let digest = curve == .p256 ? FetchedDigest.sha256 : FetchedDigest.sha384 else { return nil }
        // EVP_PKEY_CTX_new_from_pkey up-refs `key`, so the context holds its own reference.
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        // set_signature_md only records the digest (no ownership change); verify then insists the
        // to-be-verified value is exactly that digest's length.
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, digest.pointer) == 1 else {
            EVP_PKEY_CTX_free(context)
            _ = CryptographyError.drainErrorQueue()
            return nil
        }
        self.template = context
        self.digest = digest
    }

    deinit {
        EVP_PKEY_CTX_free(template)
        idle.withLock { idle in for context in idle.contexts { EVP_PKEY_CTX_free(context) } }
    }

    /// Hashes `message` and verifies the DER `signature` over the digest. False for a wrong signature and
    /// for any OpenSSL failure, whose error queue is cleared.
    func verify(der signature: [UInt8], message: [UInt8]) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { digestBuffer -> Bool in
            guard let digestStart = digestBuffer.baseAddress,
                message.withUnsafeBytes({ digest.hash($0, into: digestStart) })
            else {
                _ = CryptographyError.drainErrorQueue()
                return false
            }
            return verify(der: signature, digest: UnsafeBufferPointer(start: digestStart, count: digest.size))
        }
    }

    /// Verifies the DER `signature` over `digest`, a digest already computed with this key's algorithm (a
    /// digest of another length is refused). False for a wrong signature and for any OpenSSL failure.
    func verify(der signature: [UInt8], digest value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard value.count == digest.size else { return false }
        // The borrowed or new copy is ours alone until it is given back (or freed) below.
        guard let context = idle.withLock({ $0.contexts.popLast() }) ?? EVP_PKEY_CTX_dup(template) else {
            _ = CryptographyError.drainErrorQueue()
            return false
        }
        let result = signature.withUnsafeBufferPointer {
            EVP_PKEY_verify(context, $0.baseAddress, $0.count, value.baseAddress, value.count)
        }
        if result != 1 { _ = CryptographyError.drainErrorQueue() }
        let kept = idle.withLock { idle in
            guard idle.contexts.count < Self.maximumIdleContexts else { return false }
            idle.contexts.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
        return result == 1
    }
}

/// The idle copies of one template, each owned by the `ECVerificationContext` while it sits here and only
/// touched under its lock.
private struct IdleContexts: @unchecked Sendable {
    var contexts: [OpaquePointer] = []
}
