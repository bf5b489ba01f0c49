import Cryptography
import Foundation
import GatewayFoundation

/// Verifies App Store signed data (compact JWS, ES256, `x5c` chain to Apple) as Apple's libraries do
/// (Apple's App Store Server API documentation), with Apple's online (OCSP) checks as an option.
///
/// Steps and the verdict each can give: size and shape (`malformed`), `alg` (`unsupportedAlgorithm`),
/// `x5c` count (`invalidChainLength`), certificates and Apple's marker OIDs (`invalidCertificate`),
/// RFC 5280 path to a configured root at the verification time (`untrustedChain`), ES256 with the leaf
/// key (`invalidSignature`), kind (`wrongKind`), app and environment binding (`invalidAppIdentifier`,
/// `invalidEnvironment`). `x5c[2]` is never trusted: only configured roots are.
///
/// With `onlineChecks`, as Apple's verifier with online checks enabled: the chain is validated at the current
/// time, and the leaf's and intermediate's revocation status comes from their OCSP responders (their
/// Authority Information Access), asked only once the chain, signature and binding check out, and cached per
/// certificate until the answer's nextUpdate. A revoked certificate is `untrustedChain`; a responder that
/// cannot be reached (or answers unusably) is `retryableFailure`. The verifier does no I/O itself:
/// `verifyStep` names the statuses it needs, `record` takes the answers, and `verifyOnline` drives both
/// through an `OCSPTransport`.
package final class SignedDataVerifier: Sendable {
    /// Which instant the chain must be valid at.
    package enum ValidationTime: Sendable, Hashable {
        /// The payload's `signedDate` (`receiptCreationDate` for app transactions), or now when absent;
        /// what Apple's libraries do with online checks off.
        case signedDate
        /// Always the clock's current time.
        case now
    }

    /// Verifier settings, with documented defaults.
    package struct Configuration: Sendable {
        /// Trust anchors (Apple Root CA - G3 in production, `certs/AppleRootCA-G3.cer`).
        package var trustedRoots: [Certificate]
        /// Longest JWS accepted, in bytes; default 65 536 (a notification with two nested JWS is ~15 KB).
        package var maximumJWSLength: Int = 65_536
        /// Default `.signedDate`.
        package var validationTime: ValidationTime = .signedDate
        /// Validated chains kept; default 1024 (`verification.chainCacheSize`'s), 0 disables the cache.
        package var chainCacheCapacity: Int = Settings.defaultChainCacheSize
        /// JWS whose signature verified, kept by SHA-256 so one seen again costs no ECDSA (every other check
        /// still runs); default 4,096 (about 256 KiB), 0 disables the cache.
        package var signatureCacheCapacity: Int = 4096
        /// Whether a notification's nested `signed*Info` JWS are verified too; default true.
        package var verifiesNestedPayloads: Bool = true
        /// How long a chain that failed validation is refused again without a new validation (for the
        /// same verification time); default 30 s (`verification.negativeCacheTTL`'s), 0 disables.
        package var rejectedChainTTL: Duration = Settings.defaultNegativeCacheTTL
        /// Failed chains remembered at most; default 1024.
        package var rejectedChainCapacity: Int = 1024
        /// Apple's online checks: OCSP revocation status of leaf and intermediate, validation at the current
        /// time. Default false.
        package var onlineChecks = false
        /// OCSP answers kept at most (one per certificate); default 1024.
        package var revocationCacheCapacity: Int = 1024
        /// The longest an OCSP answer is kept, whatever its nextUpdate; default 1 day.
        package var revocationMaximumAge: TimeInterval = 86_400
        /// How long an OCSP answer without nextUpdate is kept; default 5 minutes.
        package var revocationAgeWithoutNextUpdate: TimeInterval = 300

        package init(trustedRoots: [Certificate]) {
            self.trustedRoots = trustedRoots
        }
    }

    /// Apple's marker on the WWDR intermediate certificate.
    package static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's marker on the receipt-signing leaf certificate.
    package static let leafMarkerOID = "1.2.840.113635.100.6.11.1"

    package let configuration: Configuration
    private let validator: CertificateChainValidator
    private let cache: ChainCache
    private let signatures: VerifiedSignatureCache
    private let rejected: RejectedChainCache
    /// Parsed headers, one memo per thread (up to 16 threads; more share): a header kept in a memo every loop
    /// read would have its objects retained and released by every loop's every call.
    private let headers = PerThread(count: 16) { JWSHeaderMemo(slotCount: 8) }
    private let revocations: RevocationCache
    private let clock: any VerificationClock
    private let ocspTransport: (any OCSPTransport)?

    /// A verifier trusting `configuration.trustedRoots`, reading time from `clock`, asking OCSP responders
    /// through `ocspTransport` when `configuration.onlineChecks` is on.
    package init(
        configuration: Configuration, clock: any VerificationClock = SystemVerificationClock(),
        ocspTransport: (any OCSPTransport)? = nil
    ) throws(SignedDataConfigurationError) {
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
        self.signatures = VerifiedSignatureCache(capacity: configuration.signatureCacheCapacity)
        self.rejected = RejectedChainCache(
            capacity: configuration.rejectedChainCapacity,
            ttl: Double(configuration.rejectedChainTTL.wholeMilliseconds) / 1000)
        self.revocations = RevocationCache(
            capacity: configuration.revocationCacheCapacity, maximumAge: configuration.revocationMaximumAge,
            ageWithoutNextUpdate: configuration.revocationAgeWithoutNextUpdate)
        self.clock = clock
        self.ocspTransport = ocspTransport
    }

    /// OCSP answers currently cached.
    package var revocationCacheCount: Int { revocations.count }

    /// Chain validations answered from the cache so far.
    package var chainCacheHits: Int { cache.hits }
    /// Chain validations not answered from the cache so far.
    package var chainCacheMisses: Int { cache.misses }
    /// Validated chains currently cached.
    package var chainCacheCount: Int { cache.count }

    /// Signature checks answered from the verified-signature cache (no ECDSA) so far.
    package var signatureCacheHits: Int { signatures.hits }
    /// Signature checks not answered from the verified-signature cache so far.
    package var signatureCacheMisses: Int { signatures.misses }
    /// JWS whose verified signature is currently cached.
    package var signatureCacheCount: Int { signatures.count }

    /// Verifies `jws`. A `kind` other than the payload's gives `wrongKind`; nil accepts any kind. Does no I/O:
    /// with online checks, a revocation status not cached yet gives `retryableFailure` (use
    /// `verifyOnline`, which fetches it).
    package func verify(_ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none)
        -> VerificationResult
    {
        switch verifyStep(jws, kind: kind, requirements: requirements) {
        case .done(let result): return result
        case .needsRevocationStatus(let queries):
            return .retryable(
                "online checks need the OCSP status of the \(queries.map(\.role).joined(separator: " and ")) "
                    + "certificate, not fetched yet")
        }
    }

    /// One verification pass, validating the chain when needed (CPU-heavy: off any event loop). With online
    /// checks it may end needing revocation statuses: fetch them, `record` them, and call again.
    package func verifyStep(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) -> VerificationStep {
        switch evaluate(jws, kind: kind, requirements: requirements, effort: .full) {
        case .result(let result): return .done(result)
        case .needsRevocation(let queries): return .needsRevocationStatus(queries)
        // With validation allowed, evaluation never asks for it.
        case .needsValidation:
            return .done(VerificationResult(status: .untrustedChain, message: "the chain could not be validated"))
        }
    }

    /// `verifyOnline` with each pass run in the calling task (which must not be an event loop's).
    package func verifyOnline(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) async -> VerificationResult {
        // A pass run in place always yields a step, so the result is never nil.
        await verifyOnline(jws, kind: kind, requirements: requirements, running: { $0() })
            ?? .retryable("the verification could not run")
    }

    /// Verifies `jws` with every online check done: revocation statuses not cached are fetched through the
    /// OCSP transport (awaited, no thread blocked) and the pass repeated. `run` executes each pass (e.g. on
    /// the verification pool); nil from it (a full pool) gives nil.
    package func verifyOnline(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none,
        running run: @Sendable (@escaping @Sendable () -> VerificationStep) async -> VerificationStep?
    ) async -> VerificationResult? {
        let outcome = await fetchingRevocationStatuses { () async -> RevocationPass<VerificationResult?> in
            switch await run({ self.verifyStep(jws, kind: kind, requirements: requirements) }) {
            case nil: return .done(nil)
            case .done(let result)?: return .done(result)
            case .needsRevocationStatus(let missing)?: return .needs(missing)
            }
        }
        switch outcome {
        case .success(let result): return result
        case .failure(let failure): return failure.result
        }
    }

    /// Runs `pass` until it no longer needs revocation statuses, fetching (and caching) the ones it names
    /// between passes: the one loop behind every online verification, of one JWS or of a whole answer. At
    /// most three passes (the outer chain's two statuses, then its nested payloads', normally the same chain);
    /// a status that cannot be had, or a revoked or unknown certificate, ends it with that verdict.
    package func fetchingRevocationStatuses<Value>(
        _ pass: () async -> RevocationPass<Value>
    ) async -> Result<Value, RevocationFailure> {
        for _ in 0..<3 {
            switch await pass() {
            case .done(let value): return .success(value)
            case .needs(let queries):
                if let failure = await fetchRevocationStatuses(queries) { return .failure(RevocationFailure(failure)) }
            }
        }
        return .failure(RevocationFailure(.retryable("the OCSP status is still unknown after asking the responders")))
    }

    /// Asks the responders of `queries` (a `verifyStep` that needed them) and caches their answers: nil when
    /// every certificate is good, else the answer to give (retryable failure, revoked, unknown).
    package func fetchRevocationStatuses(_ queries: [RevocationQuery]) async -> VerificationResult? {
        guard let ocspTransport else { return .retryable("online checks are on but no OCSP client is configured") }
        for query in queries {
            var outcome = OCSPTransportResult.unreachable("the certificate names no OCSP responder")
            for url in query.responderURLs {
                outcome = await ocspTransport.post(query.request, to: url)
                if case .answered = outcome { break }
            }
            if let failure = record(outcome, for: query) { return failure }
        }
        return nil
    }

    /// Takes a responder's `outcome` for `query` into the revocation cache. The answer to give instead of
    /// verifying on: `retryableFailure` (unreachable, or an unusable response) or `untrustedChain` (revoked, or
    /// unknown to the responder); nil when the certificate is good.
    package func record(_ outcome: OCSPTransportResult, for query: RevocationQuery) -> VerificationResult? {
        let answer: OCSPAnswer
        switch outcome {
        case .unreachable(let why):
            return .retryable(
                "the \(query.role) certificate's OCSP responder cannot be reached (\(why)); try again later")
        case .answered(let response):
            do {
                answer = try OCSP.answer(
                    fromResponse: response, certificate: query.certificate, issuer: query.issuer,
                    trustedRoots: configuration.trustedRoots, now: clock.now())
            } catch {
                return .retryable(
                    "the \(query.role) certificate's OCSP response is unusable: \(error.reason); try again later")
            }
        }
        switch answer.status {
        case .good:
            revocations.insert(.good, for: query.key, nextUpdate: answer.nextUpdate, now: clock.now())
        case .revoked(let date):
            revocations.insert(.revoked(at: date), for: query.key, nextUpdate: answer.nextUpdate, now: clock.now())
            return VerificationResult(
                status: .untrustedChain,
                message: "the \(query.role) certificate was revoked at \(date.formatted(.iso8601)) (OCSP)")
        case .unknown:
            return VerificationResult(
                status: .untrustedChain, message: "the OCSP responder does not know the \(query.role) certificate")
        }
        return nil
    }

    /// Verifies `jws` only when that needs no full X.509 chain validation and no OCSP fetch (the chain, or its
    /// recent failure, and any revocation status are cached): cheap enough for an event loop. nil: call
    /// `verifyOnline` off the loop.
    package func verifyIfChainCached(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) -> VerificationResult? {
        verdict(jws, kind: kind, requirements: requirements, effort: .cachedChain)
    }

    /// Verifies `jws` only when that needs no chain validation, no OCSP fetch and no ECDSA either (the
    /// signature verified before, see `VerifiedSignatureCache`): parsing, hashing and cache lookups, a few
    /// microseconds. nil: the verification would hold a thread for longer (`verifyOnline` off the loop).
    package func verifyIfCached(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) -> VerificationResult? {
        verdict(jws, kind: kind, requirements: requirements, effort: .cachedOnly)
    }

    /// `result`, a verification bound to no app (`requirements: .none`) that passed, now bound to `requirements`
    /// without parsing or verifying anything again: the bundle id, app Apple id and environment checks that
    /// `verify(_:kind:requirements:)` makes, on the facts the verification read, of the payload and of each nested
    /// one (a nested failure fails the whole, named by its field, as there). nil when `result` did not pass or
    /// carries no parsed payload, or `requirements` accept unverified environments: verify with them instead.
    package func bind(_ result: VerificationResult, to requirements: VerificationRequirements) -> VerificationResult? {
        guard result.status == .ok, requirements.unverifiedEnvironments.isEmpty, let payload = result.payloadObject
        else { return nil }
        do throws(Rejection) {
            try Self.checkBinding(PayloadFacts(payload: payload, requestedKind: result.kind), requirements)
        } catch {
            return VerificationResult(
                status: error.status, message: error.message, kind: result.kind, signedDate: result.signedDate,
                environment: result.environment, rawJSON: result.rawJSON)
        }
        for item in result.nestedPayloads {
            guard let bound = bind(item.result, to: requirements) else { return nil }
            guard bound.isVerified else {
                return VerificationResult(
                    status: bound.status, message: "\(item.field.rawValue): \(bound.message)", kind: result.kind,
                    signedDate: result.signedDate, environment: result.environment, rawJSON: result.rawJSON,
                    nestedPayloads: result.nestedPayloads)
            }
        }
        return result
    }

    /// The pass's verdict when `effort` was enough to reach one.
    private func verdict(
        _ jws: String, kind: SignedDataKind?, requirements: VerificationRequirements, effort: Effort
    ) -> VerificationResult? {
        guard case .result(let result) = evaluate(jws, kind: kind, requirements: requirements, effort: effort)
        else { return nil }
        return result
    }

    /// How much work one pass may do.
    private enum Effort {
        /// Anything: a chain not cached is validated.
        case full
        /// The chain (or its recent failure) from the cache; the signature checked with ECDSA when not cached.
        case cachedChain
        /// The chain and the signature from their caches only.
        case cachedOnly
    }

    /// A pass's end: a verdict, or what is missing to reach one.
    private enum Outcome {
        case result(VerificationResult)
        case needsValidation
        case needsRevocation([RevocationQuery])
    }

    private func evaluate(
        _ jws: String, kind: SignedDataKind?, requirements: VerificationRequirements, effort: Effort
    ) -> Outcome {
        var known: (kind: SignedDataKind?, signedDate: Date?, environment: AppStoreEnvironment?, rawJSON: Data?) =
            (nil, nil, nil, nil)
        do throws(Rejection) {
            if !requirements.unverifiedEnvironments.isEmpty,
                let result = try unverifiedEvaluation(jws, kind: kind, requirements: requirements)
            {
                return .result(result)
            }
            let token = try CompactJWS(
                parsing: jws, maximumLength: configuration.maximumJWSLength, headers: headers.current)
            guard let payload = JSONMembers(parsing: token.payload) else {
                throw Rejection(.malformed, "the JWS payload is not a JSON object")
            }
            let facts = try PayloadFacts(payload: payload, requestedKind: kind)
            let environment = facts.identity.environment.flatMap(AppStoreEnvironment.init(rawValue:))
            known = (facts.kind, facts.signedDate, environment, nil)
            guard
                let leafKey = try trustedLeafKey(
                    token, at: verificationTime(facts), timeIsNow: verificationTimeIsNow(facts),
                    mayValidate: effort == .full)
            else { return .needsValidation }
            guard let verifies = signatureVerifies(token, under: leafKey, mayCompute: effort != .cachedOnly) else {
                return .needsValidation
            }
            guard verifies else {
                let detail =
                    token.signature.count == 64
                    ? "does not verify under the leaf certificate's key"
                    : "is \(token.signature.count) bytes; ES256 needs the 64-byte r‖s form (DER is not JWS)"
                throw Rejection(.invalidSignature, "the ES256 signature \(detail)")
            }
            known.rawJSON = token.payload
            if let kind, kind != facts.kind {
                throw Rejection(.wrongKind, "a \(kind.rawValue) was asked for; the payload is a \(facts.kind.rawValue)")
            }
            try Self.checkBinding(facts, requirements)
            var pending = try missingRevocations(token)
            var nested: [NestedPayload] = []
            if configuration.verifiesNestedPayloads {
                for item in facts.nested {
                    switch evaluate(
                        item.jws, kind: item.field.kind, requirements: requirements, effort: effort)
                    {
                    case .result(let result): nested.append(NestedPayload(field: item.field, result: result))
                    case .needsValidation: return .needsValidation
                    case .needsRevocation(let queries):
                        pending += queries.filter { query in !pending.contains { $0.key == query.key } }
                    }
                }
            }
            if !pending.isEmpty { return .needsRevocation(pending) }
            if let failed = nested.first(where: { !$0.result.isVerified && $0.result.status != .unverifiedByDesign }) {
                return .result(
                    VerificationResult(
                        status: failed.result.status, message: "\(failed.field.rawValue): \(failed.result.message)",
                        kind: facts.kind, signedDate: facts.signedDate, environment: environment,
                        rawJSON: token.payload,
                        nestedPayloads: nested))
            }
            // A signed notification whose nested data is Xcode's (accepted unverified) is no better than that data.
            let unverifiedInside = nested.contains { $0.result.status == .unverifiedByDesign }
            return .result(
                VerificationResult(
                    status: unverifiedInside ? .unverifiedByDesign : .ok,
                    message: unverifiedInside ? Self.unverifiedMessage : "verified", kind: facts.kind,
                    signedDate: facts.signedDate, environment: environment, rawJSON: token.payload,
                    payloadObject: payload,
                    nestedPayloads: nested))
        } catch {
            return .result(
                VerificationResult(
                    status: error.status, message: error.message, kind: known.kind, signedDate: known.signedDate,
                    environment: known.environment, rawJSON: known.rawJSON))
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
        guard let payload = JSONMembers(parsing: raw) else {
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
                    .invalidEnvironment,
                    "\(item.field.rawValue) is not \(environment.rawValue) data like its notification")
            }
            nested.append(NestedPayload(field: item.field, result: result))
        }
        return VerificationResult(
            status: .unverifiedByDesign, message: Self.unverifiedMessage, kind: facts.kind,
            signedDate: facts.signedDate, environment: environment, rawJSON: raw, payloadObject: payload,
            nestedPayloads: nested)
    }

    /// With online checks: the OCSP queries for the leaf and intermediate of `token`'s (validated) chain whose
    /// status is not cached; a cached revocation throws.
    private func missingRevocations(_ token: CompactJWS) throws(Rejection) -> [RevocationQuery] {
        guard configuration.onlineChecks else { return [] }
        let now = clock.now()
        var missing: [(index: Int, key: RevocationCache.Key)] = []
        for (index, role) in ["leaf", "intermediate"].enumerated() {
            let key = RevocationCache.Key(certificateText: token.certificateChain[index].utf8)
            switch revocations.status(for: key, now: now) {
            case .good?: continue
            case .revoked(let date)?:
                throw Rejection(
                    .untrustedChain, "the \(role) certificate was revoked at \(date.formatted(.iso8601)) (OCSP)")
            case nil: missing.append((index, key))
            }
        }
        guard !missing.isEmpty else { return [] }
        let leaf: Certificate
        let intermediate: Certificate
        let leafDER = try token.certificateDER(at: 0)
        let intermediateDER = try token.certificateDER(at: 1)
        do {
            leaf = try Certificate(derEncoded: leafDER)
            intermediate = try Certificate(derEncoded: intermediateDER)
        } catch {
            throw Rejection(.invalidCertificate, "x5c holds a certificate that does not parse: \(error.reason)")
        }
        guard let root = configuration.trustedRoots.first(where: { intermediate.isIssued(by: $0) }) else {
            throw Rejection(.untrustedChain, "no configured root issued the intermediate")
        }
        var queries: [RevocationQuery] = []
        for (index, key) in missing {
            let (certificate, issuer, role) =
                index == 0 ? (leaf, intermediate, "leaf") : (intermediate, root, "intermediate")
            let urls = OCSP.responderURLs(of: certificate)
            guard !urls.isEmpty else {
                throw Rejection(
                    .untrustedChain, "the \(role) certificate names no OCSP responder, so online checks cannot check it"
                )
            }
            let request: [UInt8]
            do throws(CryptographyError) {
                request = try OCSP.request(for: certificate, issuer: issuer)
            } catch {
                throw Rejection(.invalidCertificate, "no OCSP request can be made for the \(role): \(error.reason)")
            }
            queries.append(
                RevocationQuery(
                    role: role, certificate: certificate, issuer: issuer, key: key, responderURLs: urls,
                    request: request))
        }
        return queries
    }

    /// Whether `token`'s ES256 signature verifies under its (trusted) leaf key: a JWS whose signature verified
    /// before is answered from the cache of verified signatures, which depends on the JWS's bytes alone. nil:
    /// not cached, and `mayCompute` is false (the ECDSA is left to a caller that may hold its thread).
    private func signatureVerifies(_ token: CompactJWS, under leafKey: ECPublicKey, mayCompute: Bool) -> Bool? {
        // The digest the signature signs is the cache's key too (with the signature): a hit costs the
        // payload's part of it, not a hash of the whole 5 KB JWS, and a miss hashes nothing twice.
        let digest = token.signingInputDigest()
        guard signatures.isEnabled else {
            return mayCompute ? token.signatureVerifies(under: leafKey, digest: digest) : nil
        }
        let key = VerifiedSignatureCache.Key(signingInputDigest: digest, signature: token.signature)
        if signatures.contains(key) { return true }
        guard mayCompute else { return nil }
        guard token.signatureVerifies(under: leafKey, digest: digest) else { return false }
        signatures.insert(key)
        return true
    }

    /// Whether `verificationTime` is the current time, which no payload chooses (online checks, `.now`, or a
    /// payload without `signedDate`).
    private func verificationTimeIsNow(_ facts: PayloadFacts) -> Bool {
        configuration.onlineChecks || configuration.validationTime == .now || facts.signedDate == nil
    }

    private func verificationTime(_ facts: PayloadFacts) -> Date {
        // Online checks validate at the current time, as Apple's verifier does with them.
        if configuration.onlineChecks { return clock.now() }
        switch configuration.validationTime {
        case .signedDate: return facts.signedDate ?? clock.now()
        case .now: return clock.now()
        }
    }

    /// The leaf's key once leaf → intermediate → configured root is valid at `time`, from the cache when
    /// this pair was validated before for a time inside its window. nil when `mayValidate` is false and
    /// neither cache answers.
    private func trustedLeafKey(_ token: CompactJWS, at time: Date, timeIsNow: Bool, mayValidate: Bool)
        throws(Rejection) -> ECPublicKey?
    {
        // The same checks, in the same order, as decoding all three; x5c[2] must be well-formed, but is
        // never trusted. The cache is keyed by the texts, so a hit decodes and parses nothing.
        try token.checkCertificateTexts()
        let key = token.header.chainKey
        let now = clock.now()
        if let cached = cache.leafKey(for: key, verificationTime: time, now: now) { return cached }
        // A payload's own date keys the refusal to that instant (a forged date cannot poison the chain for
        // others); the current time, which moves every call, keys it as "now" so the refusal holds for its TTL.
        let rejectedKey = RejectedChainCache.Key(
            chain: key,
            verificationMilliseconds: timeIsNow
                ? RejectedChainCache.Key.now : Int64(saturating: time.timeIntervalSince1970 * 1000) ?? 0)
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
                .invalidCertificate,
                "the leaf (\(leaf.subject)) lacks Apple's receipt-signing marker \(Self.leafMarkerOID)")
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
                "bundle id in \(identity.source) is \(identity.bundleID.map { "\"\($0)\"" } ?? "absent"), expected \"\(expected)\""
            )
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
                    "appAppleId in \(identity.source) is \(identity.appAppleID.map(String.init) ?? "absent"), expected \(expected)"
                )
            }
        } else if bindsAppAppleID, let expected = requirements.appAppleID, let actual = identity.appAppleID,
            actual != expected
        {
            throw Rejection(
                .invalidAppIdentifier, "appAppleId in \(identity.source) is \(actual), expected \(expected)")
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
