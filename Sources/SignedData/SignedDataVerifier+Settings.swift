import AppStoreDomain
import Cryptography
import GatewayFoundation

extension SignedDataVerifier {
    /// Signed-data verification.
    package struct Settings: Sendable, Hashable {
        /// DER or PEM root certificates trusted for Apple-signed data; empty = the built-in Apple Root CA - G3.
        /// `verification.rootCertificates`.
        package var rootCertificates: [String] = []
        /// Trust the built-in Apple Root CA - G3 besides `rootCertificates` (the simulator demo does).
        package var trustBuiltInAppleRoot = false
        /// Verified chains remembered (LRU). `verification.chainCacheSize`, 1024.
        package var chainCacheSize = Self.defaultChainCacheSize
        /// JWS whose signature verified, remembered by SHA-256 (see `GatewayConfiguration+SignatureCache.swift`).
        /// `verification.signatureCacheSize`, 4096; 0 disables.
        package var signatureCacheSize = 4096
        /// Validate chains at the current time instead of the payload's signedDate. `verification.useCurrentTime`.
        package var useCurrentTime = false
        /// Let a VerifyJWS without `app` verify signature and chain only, bound to no app (the old fail-open
        /// behaviour). `verification.allowUnboundVerification`, false: an empty `app` means the only configured
        /// app, and is INVALID_ARGUMENT when several are configured.
        package var allowUnboundVerification = false
        /// Worker threads for VerifyJWS calls whose chain is not cached (a full X.509 validation, kept off the
        /// event loops). `verification.poolThreads`, 2.
        package var poolThreads = 2
        /// Such calls waiting for a worker at most; more are RESOURCE_EXHAUSTED with RetryInfo.
        /// `verification.poolQueue`, 64.
        package var poolQueue = 64
        /// How long a chain that failed validation is refused from memory (for the same verification time)
        /// before it is validated again. `verification.negativeCacheTTL`, 30s; 0 disables.
        package var negativeCacheTTL: Duration = Self.defaultNegativeCacheTTL
        /// Apple's online checks (OCSP revocation of leaf and intermediate, validation at the current time).
        /// `verification.onlineChecks` and friends, see `GatewayConfiguration+OnlineChecks.swift`.
        package var onlineChecks = OnlineChecks()
        package init() {}

        /// `verification.chainCacheSize`'s default, the verifier's too (`Configuration.chainCacheCapacity`).
        package static let defaultChainCacheSize = 1024
        /// `verification.negativeCacheTTL`'s default, the verifier's too (`Configuration.rejectedChainTTL`).
        package static let defaultNegativeCacheTTL: Duration = .seconds(30)
    }

    /// Apple's online checks for signed data, as Apple's verifier offers them: the OCSP revocation status of
    /// the leaf and intermediate certificates, asked of the responder their Authority Information Access
    /// names, and chain validation at the current time instead of the payload's signedDate.
    package struct OnlineChecks: Sendable, Hashable {
        /// `verification.onlineChecks`: on or off. Default false.
        package var enabled = false
        /// `verification.ocspTimeout`: the longest one OCSP request may take. Default 5s.
        package var timeout: Duration = .seconds(5)
        /// `verification.ocspCacheSize`: OCSP answers kept (one per certificate, each until its nextUpdate,
        /// at most a day). Default 1024.
        package var cacheSize = 1024

        package init() {}
    }
}

extension SignedDataVerifier.Configuration {
    /// The verifier's settings from the gateway's `verification` keys, trusting `roots`.
    package init(_ verification: SignedDataVerifier.Settings, trustedRoots roots: [Certificate]) {
        self.init(trustedRoots: roots)
        chainCacheCapacity = verification.chainCacheSize
        signatureCacheCapacity = verification.signatureCacheSize
        validationTime = verification.useCurrentTime ? .now : .signedDate
        rejectedChainTTL = verification.negativeCacheTTL
        onlineChecks = verification.onlineChecks.enabled
        revocationCacheCapacity = verification.onlineChecks.cacheSize
    }
}

extension SignedDataVerifier {
    /// The roots `verification` trusts: Apple's built-in root (when no file is named, or with
    /// `trustBuiltInAppleRoot`), then each `rootCertificates` file (DER or PEM), read now so a bad file fails
    /// start-up. Errors name the key at fault.
    package static func trustedRoots(
        _ verification: SignedDataVerifier.Settings
    ) throws(ConfigurationError) -> [Certificate] {
        var roots: [Certificate] = []
        if verification.rootCertificates.isEmpty || verification.trustBuiltInAppleRoot {
            do {
                roots.append(try Certificate(derEncoded: AppleRootCertificates.rootCAG3))
            } catch {
                throw ConfigurationError(
                    key: "verification.rootCertificates", problem: "the built-in Apple root: \(error)")
            }
        }
        for (index, path) in verification.rootCertificates.enumerated() {
            do {
                roots.append(try Certificate(contentsOfFile: path))
            } catch {
                throw ConfigurationError(
                    key: "verification.rootCertificates[\(index)]",
                    problem: "cannot load a DER or PEM certificate from '\(path)': \(error)")
            }
        }
        return roots
    }
}
