/// The verdict of a verification, mirroring the API contract's `VerificationStatus` (proto/appstore/gateway/v1/verify.proto);
/// `protoStatus` gives the wire enum.
package enum VerificationVerdict: String, Sendable, Hashable, CaseIterable {
    /// Signature, chain and every requested binding check passed.
    case ok
    /// Not three base64url parts, oversized, bad JSON, or a required header/payload field missing or mistyped.
    case malformed
    /// The header's `alg` is not `ES256`.
    case unsupportedAlgorithm
    /// `x5c` does not hold exactly 3 certificates.
    case invalidChainLength
    /// A certificate is unparseable, lacks Apple's marker OID, or has a key unfit for ES256.
    case invalidCertificate
    /// The chain does not lead to a configured root, or is not valid at the verification time.
    case untrustedChain
    /// The ES256 signature does not verify under the leaf key.
    case invalidSignature
    /// Bundle id or app Apple id differs from the one required.
    case invalidAppIdentifier
    /// The payload's environment differs from the one required (or is absent when one is required).
    case invalidEnvironment
    /// A kind was asked for and the payload is another.
    case wrongKind
    /// Online checks could not reach (or get a usable answer from) a certificate's OCSP responder: retry later.
    case retryableFailure
    /// Xcode or LocalTesting data, which Apple does not sign: decoded without a signature check, only for an
    /// app configured for it.
    case unverifiedByDesign
}

/// What a signed payload is.
package enum SignedDataKind: String, Sendable, Hashable, CaseIterable {
    /// JWSTransactionDecodedPayload (`signedTransactionInfo`, `signedTransactions[]`).
    case transaction
    /// JWSRenewalInfoDecodedPayload (`signedRenewalInfo`).
    case renewalInfo
    /// ResponseBodyV2DecodedPayload (notification `signedPayload`).
    case notification
    /// AppTransaction (`signedAppTransactionInfo`).
    case appTransaction
    /// DecodedRealtimeRequestBody (Retention Messaging realtime requests).
    case realtimeRequest
}

/// An App Store environment, spelled as Apple spells it in payloads.
package enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"
}
