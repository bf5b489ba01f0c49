import Configuration
import Cryptography

extension SignedDataVerifier.Configuration {
    /// The verifier's settings from the gateway's `verification` keys, trusting `roots`.
    public init(_ verification: GatewayConfiguration.Verification, trustedRoots roots: [Certificate]) {
        self.init(trustedRoots: roots)
        chainCacheCapacity = verification.chainCacheSize
        signatureCacheCapacity = verification.signatureCacheSize
        validationTime = verification.useCurrentTime ? .now : .signedDate
        rejectedChainTTL = Double(verification.negativeCacheTTL.wholeMilliseconds) / 1000
        onlineChecks = verification.onlineChecks.enabled
        revocationCacheCapacity = verification.onlineChecks.cacheSize
    }
}

extension SignedDataVerifier {
    /// The roots `verification` trusts: Apple's built-in root (when no file is named, or with
    /// `trustBuiltInAppleRoot`), then each `rootCertificates` file (DER or PEM), read now so a bad file fails
    /// start-up. Errors name the key at fault.
    public static func trustedRoots(
        _ verification: GatewayConfiguration.Verification
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
