import Cryptography
import GatewayCore
import Foundation

/// Verifies App Store signed data (compact JWS, ES256, `x5c` chain to Apple) as Apple's libraries do
/// (Apple's App Store Server API documentation), with online (OCSP) checks off.
///
/// Steps and the verdict each can give: size and shape (`malformed`), `alg` (`unsupportedAlgorithm`),
/// `x5c` count (`invalidChainLength`), certificates and Apple's marker OIDs (`invalidCertificate`),
/// RFC 5280 path to a configured root at the verification time (`untrustedChain`), ES256 with the leaf
/// key (`invalidSignature`), kind (`wrongKind`), app and environment binding (`invalidAppIdentifier`,
/// `invalidEnvironment`). `x5c[2]` is never trusted: only configured roots are.
public final class SignedDataVerifier: Sendable {
    /// Which instant the chain must be valid at.
    public enum ValidationTime: Sendable, Hashable {
        /// The payload's `signedDate` (`receiptCreationDate` for app transactions), or now when absent;
        /// what Apple's libraries do with online checks off.
        case signedDate
        /// Always the clock's current time.
        case now
    }

    /// Verifier settings, with documented defaults.
    public struct Configuration: Sendable {
        /// Trust anchors (Apple Root CA - G3 in production, `certs/AppleRootCA-G3.cer`).
        public var trustedRoots: [Certificate]
        /// Longest JWS accepted, in bytes; default 65 536 (a notification with two nested JWS is ~15 KB).
        public var maximumJWSLength: Int = 65_536
        /// Default `.signedDate`.
        public var validationTime: ValidationTime = .signedDate
        /// Validated chains kept; default 256, 0 disables the cache.
        public var chainCacheCapacity: Int = 256
        /// Whether a notification's nested `signed*Info` JWS are verified too; default true.
        public var verifiesNestedPayloads: Bool = true
        /// How long a chain that failed validation is refused again without a new validation (for the
        /// same verification time); default 30 s, 0 disables.
        public var rejectedChainTTL: TimeInterval = 30
        /// Failed chains remembered at most; default 1024.
        public var rejectedChainCapacity: Int = 1024

        public init(trustedRoots: [Certificate]) {
            self.trustedRoots = trustedRoots
        }
    }

    /// Apple's marker on the WWDR intermediate certificate.
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's marker on the receipt-signing leaf certificate.
    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"

    public let configuration: Configuration
    private let validator: CertificateChainValidator
    private let cache: ChainCache
    private let rejected: RejectedChainCache
    private let clock: any VerificationClock

    /// A verifier trusting `configuration.trustedRoots`, reading time from `clock`.
    public init(configuration: Configuration, clock: any VerificationClock = SystemVerificationClock())
        throws(SignedDataConfigurationError)
    {
        guard configuration.maximumJWSLength > 0, configuration.chainCacheCapacity >= 0 else {
            throw SignedDataConfigurationError("maximumJWSLength must be positive and chainCacheCapacity not negative")
        }
        do {
            validator = try CertificateChainValidator(trustedRoots: configuration.trustedRoots)
        } catch {
            throw SignedDataConfigurationError("trusted roots unusable: \(error)")
        }
        self.configuration = configuration
        self.cache = ChainCache(capacity: configuration.chainCacheCapacity)
        self.rejected = RejectedChainCache(
            capacity: configuration.rejectedChainCapacity, ttl: configuration.rejectedChainTTL)
        self.clock = clock
    }

    /// Chain validations answered from the cache so far.
    public var chainCacheHits: Int { cache.hits }
    /// Chain validations not answered from the cache so far.
    public var chainCacheMisses: Int { cache.misses }
    /// Validated chains currently cached.
    public var chainCacheCount: Int { cache.count }

    /// Verifies `jws`. A `kind` other than the payload's gives `wrongKind`; nil accepts any kind.
    public func verify(_ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none)
        -> VerificationResult
    {
        // With validation allowed, evaluation always reaches a verdict.
        evaluate(jws, kind: kind, requirements: requirements, mayValidateChain: true)
            ?? VerificationResult(status: .untrustedChain, message: "the chain could not be validated")
    }

    /// Verifies `jws` only when that needs no full X.509 chain validation (the chain, or its recent failure,
    /// is cached): cheap enough for an event loop. nil: a validation is needed; call `verify` off the loop.
    public func verifyIfChainCached(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) -> VerificationResult? {
        evaluate(jws, kind: kind, requirements: requirements, mayValidateChain: false)
    }

    private func evaluate(
        _ jws: String, kind: SignedDataKind?, requirements: VerificationRequirements, mayValidateChain: Bool
    ) -> VerificationResult? {
        var known: (kind: SignedDataKind?, signedDate: Date?, environment: AppStoreEnvironment?, rawJSON: Data?) =
            (nil, nil, nil, nil)
        do throws(Rejection) {
            if !requirements.unverifiedEnvironments.isEmpty,
                let result = try unverifiedEvaluation(jws, kind: kind, requirements: requirements)
            {
                return result
            }
            let token = try CompactJWS(parsing: jws, maximumLength: configuration.maximumJWSLength)
            guard let payload = JSONValue.object(from: token.payload) else {
                throw Rejection(.malformed, "the JWS payload is not a JSON object")
            }
            let facts = try PayloadFacts(payload: payload, requestedKind: kind)
            let environment = facts.identity.environment.flatMap(AppStoreEnvironment.init(rawValue:))
            known = (facts.kind, facts.signedDate, environment, nil)
            guard let leafKey = try trustedLeafKey(token, at: verificationTime(facts), mayValidate: mayValidateChain)
            else { return nil }
            guard leafKey.isValidSignature(token.signature, for: token.signingInput) else {
                let detail = token.signature.count == 64
                    ? "does not verify under the leaf certificate's key"
                    : "is \(token.signature.count) bytes; ES256 needs the 64-byte r‖s form (DER is not JWS)"
                throw Rejection(.invalidSignature, "the ES256 signature \(detail)")
            }
            known.rawJSON = token.payload
            if let kind, kind != facts.kind {
                throw Rejection(.wrongKind, "a \(kind.rawValue) was asked for; the payload is a \(facts.kind.rawValue)")
            }
            try Self.checkBinding(facts, requirements)
            var nested: [NestedPayload] = []
            if configuration.verifiesNestedPayloads {
                for item in facts.nested {
                    guard let result = evaluate(
                        item.jws, kind: item.field.kind, requirements: requirements, mayValidateChain: mayValidateChain)
                    else { return nil }
                    nested.append(NestedPayload(field: item.field, result: result))
                }
            }
            if let failed = nested.first(where: { !$0.result.isVerified && $0.result.status != .unverifiedByDesign }) {
                return VerificationResult(
                    status: failed.result.status, message: "\(failed.field.rawValue): \(failed.result.message)",
                    kind: facts.kind, signedDate: facts.signedDate, environment: environment, rawJSON: token.payload,
                    nestedPayloads: nested)
            }
            // A signed notification whose nested data is Xcode's (accepted unverified) is no better than that data.
            let unverifiedInside = nested.contains { $0.result.status == .unverifiedByDesign }
            return VerificationResult(
                status: unverifiedInside ? .unverifiedByDesign : .ok,
                message: unverifiedInside ? Self.unverifiedMessage : "verified", kind: facts.kind,
                signedDate: facts.signedDate, environment: environment, rawJSON: token.payload, payloadObject: payload,
                nestedPayloads: nested)
        } catch {
            return VerificationResult(
                status: error.status, message: error.message, kind: known.kind, signedDate: known.signedDate,
                environment: known.environment, rawJSON: known.rawJSON)
        }
    }

    private static let unverifiedMessage =
        "not verified, by design: Xcode and LocalTesting data is signed by Xcode, not Apple (app configured for it)"

    /// Xcode and LocalTesting data for an app configured for it: decoded without any signature or chain check
    /// (Apple's verifier skips them too), the app and environment still bound. nil when the payload claims
    /// another environment, which then goes through full verification.
    private func unverifiedEvaluation(
        _ jws: String, kind: SignedDataKind?, requirements: VerificationRequirements
    ) throws(Rejection) -> VerificationResult? {
        let raw = try CompactJWS.unverifiedPayload(of: jws, maximumLength: configuration.maximumJWSLength)
        guard let payload = JSONValue.object(from: raw) else {
            throw Rejection(.malformed, "the JWS payload is not a JSON object")
        }
        let facts = try PayloadFacts(payload: payload, requestedKind: kind)
        guard let environment = facts.identity.environment.flatMap(AppStoreEnvironment.init(rawValue:)),
            requirements.unverifiedEnvironments.contains(environment)
        else { return nil }
        if let kind, kind != facts.kind {
            throw Rejection(.wrongKind, "a \(kind.rawValue) was asked for; the payload is a \(facts.kind.rawValue)")
        }
        try Self.checkBinding(facts, requirements)
        var nested: [NestedPayload] = []
        for item in facts.nested {
            let result: VerificationResult?
            do {
                result = try unverifiedEvaluation(item.jws, kind: item.field.kind, requirements: requirements)
            } catch {
                throw Rejection(error.status, "\(item.field.rawValue): \(error.message)")
            }
            guard let result else {
                throw Rejection(
                    .invalidEnvironment, "\(item.field.rawValue) is not \(environment.rawValue) data like its notification")
            }
            nested.append(NestedPayload(field: item.field, result: result))
        }
        return VerificationResult(
            status: .unverifiedByDesign, message: Self.unverifiedMessage, kind: facts.kind,
            signedDate: facts.signedDate, environment: environment, rawJSON: raw, payloadObject: payload,
            nestedPayloads: nested)
    }

    private func verificationTime(_ facts: PayloadFacts) -> Date {
        switch configuration.validationTime {
        case .signedDate: facts.signedDate ?? clock.now()
        case .now: clock.now()
        }
    }

    /// The leaf's key once leaf → intermediate → configured root is valid at `time`, from the cache when
    /// this pair was validated before for a time inside its window. nil when `mayValidate` is false and
    /// neither cache answers.
    private func trustedLeafKey(_ token: CompactJWS, at time: Date, mayValidate: Bool)
        throws(Rejection) -> ECPublicKey?
    {
        // The same checks, in the same order, as decoding all three; x5c[2] must be well-formed, but is
        // never trusted. The cache is keyed by the texts, so a hit decodes and parses nothing.
        for index in 0..<3 { try token.checkCertificateText(at: index) }
        let key = ChainCache.Key(
            leafText: token.certificateChain[0].utf8, intermediateText: token.certificateChain[1].utf8)
        let now = clock.now()
        if let cached = cache.leafKey(for: key, verificationTime: time, now: now) { return cached }
        let rejectedKey = RejectedChainCache.Key(
            chain: key, verificationMilliseconds: Int64(saturating: time.timeIntervalSince1970 * 1000) ?? 0)
        if let known = rejected.rejection(for: rejectedKey, now: now) { throw known }
        guard mayValidate else { return nil }
        do {
            return try validatedLeafKey(token, key: key, at: time, now: now)
        } catch {
            rejected.insert(error, for: rejectedKey, now: now)
            throw error
        }
    }

    /// Full validation of `token`'s chain at `time`, cached under `key` when it passes.
    private func validatedLeafKey(_ token: CompactJWS, key: ChainCache.Key, at time: Date, now: Date)
        throws(Rejection) -> ECPublicKey
    {

        let leafDER = try token.certificateDER(at: 0)
        let intermediateDER = try token.certificateDER(at: 1)

        let leaf: Certificate
        let intermediate: Certificate
        do {
            leaf = try Certificate(derEncoded: leafDER)
            intermediate = try Certificate(derEncoded: intermediateDER)
        } catch {
            throw Rejection(.invalidCertificate, "x5c holds a certificate that does not parse: \(error.reason)")
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            throw Rejection(
                .invalidCertificate,
                "the intermediate (\(intermediate.subject)) lacks Apple's WWDR marker \(Self.intermediateMarkerOID)")
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            throw Rejection(
                .invalidCertificate, "the leaf (\(leaf.subject)) lacks Apple's receipt-signing marker \(Self.leafMarkerOID)")
        }
        let window: ValidatedChain
        switch validator.validate(leaf: leaf, intermediates: [intermediate], at: time) {
        case .valid(let validated):
            window = validated
        case .invalid(let failure):
            throw Rejection(.untrustedChain, Self.explain(failure, at: time))
        }
        let leafKey: ECPublicKey
        do {
            leafKey = try leaf.publicKey()
        } catch {
            throw Rejection(.invalidCertificate, "the leaf's public key is unusable: \(error.reason)")
        }
        guard leafKey.curve == .p256 else {
            throw Rejection(.invalidCertificate, "the leaf key is \(leafKey.curve.rawValue); ES256 needs P-256")
        }
        cache.insert(
            ChainCache.Entry(leafKey: leafKey, validFrom: window.validFrom, validUntil: window.validUntil),
            for: key, now: now)
        return leafKey
    }

    private static func explain(_ failure: ChainValidationFailure, at time: Date) -> String {
        let position = ["leaf", "intermediate", "root"][min(max(Int(failure.depth), 0), 2)]
        let instant = "at \(time.formatted(.iso8601))"
        switch failure.reason {
        case .untrusted: return "the chain does not lead to a configured root (\(failure))"
        case .expired: return "the \(position) certificate had expired \(instant) (\(failure))"
        case .notYetValid: return "the \(position) certificate was not yet valid \(instant) (\(failure))"
        case .badSignature: return "the \(position) certificate's signature does not verify (\(failure))"
        case .invalidCertificateAuthority, .policyViolation, .other:
            return "the chain fails RFC 5280 validation \(instant) at the \(position) certificate (\(failure))"
        }
    }

    private static func checkBinding(_ facts: PayloadFacts, _ requirements: VerificationRequirements)
        throws(Rejection)
    {
        let identity = facts.identity
        // Renewal info and realtime requests carry no bundle id (a realtime request is bound by its app Apple id).
        let carriesBundleID = facts.kind != .renewalInfo && facts.kind != .realtimeRequest
        if let expected = requirements.bundleID, carriesBundleID, identity.bundleID != expected {
            throw Rejection(
                .invalidAppIdentifier,
                "bundle id in \(identity.source) is \(identity.bundleID.map { "\"\($0)\"" } ?? "absent"), expected \"\(expected)\"")
        }
        let bindsAppAppleID = [.notification, .appTransaction, .realtimeRequest].contains(facts.kind)
        let environment = requirements.environment?.rawValue ?? identity.environment
        if bindsAppAppleID, requirements.bundleID != nil || requirements.appAppleID != nil,
            environment == AppStoreEnvironment.production.rawValue
        {
            guard let expected = requirements.appAppleID else {
                throw Rejection(.invalidAppIdentifier, "Production data can only be bound with the app's Apple id")
            }
            guard identity.appAppleID == expected else {
                throw Rejection(
                    .invalidAppIdentifier,
                    "appAppleId in \(identity.source) is \(identity.appAppleID.map(String.init) ?? "absent"), expected \(expected)")
            }
        } else if bindsAppAppleID, let expected = requirements.appAppleID, let actual = identity.appAppleID,
            actual != expected
        {
            throw Rejection(.invalidAppIdentifier, "appAppleId in \(identity.source) is \(actual), expected \(expected)")
        }
        if let accepted = requirements.acceptedEnvironments,
            !accepted.contains(where: { $0.rawValue == identity.environment })
        {
            let expected = accepted.map { "\"\($0.rawValue)\"" }.sorted().joined(separator: " or ")
            throw Rejection(
                .invalidEnvironment,
                "environment in \(identity.source) is \(identity.environment.map { "\"\($0)\"" } ?? "absent"), "
                    + "expected \(expected)")
        }
    }
}
