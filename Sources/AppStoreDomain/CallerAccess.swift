import GatewayFoundation

/// Why a caller's credentials were not accepted (UNAUTHENTICATED). Each case is one value of the
/// `reason` label of the refusal metric and of the status's ErrorInfo, so the set is fixed.
package enum AuthenticationFailure: String, Error, Sendable, Hashable, CaseIterable {
    /// No `authorization` bearer token and no client certificate identity.
    case missingCredentials = "missing_credentials"
    /// The `authorization` value is not "Bearer <token>", or the token is not a compact JWS of a JSON header
    /// and payload, or it is larger than the gateway accepts.
    case malformedToken = "malformed_token"
    /// `alg` is not RS256 or ES256 (including "none").
    case unsupportedAlgorithm = "unsupported_algorithm"
    /// No key of the JWKS has the token's `kid` (with the token's algorithm).
    case unknownKey = "unknown_key"
    /// The signature does not verify under the key.
    case badSignature = "bad_signature"
    /// `exp` is missing or passed.
    case expired = "expired"
    /// `nbf` is in the future.
    case notYetValid = "not_yet_valid"
    /// `iss` is not the configured issuer.
    case wrongIssuer = "wrong_issuer"
    /// `aud` names none of the configured audiences.
    case wrongAudience = "wrong_audience"
    /// No `sub`, or an empty one.
    case missingSubject = "missing_subject"
    /// A bearer token was sent but the gateway accepts none (no `authentication.jwt`).
    case tokensNotAccepted = "tokens_not_accepted"
    /// The JWKS file could not be read or holds no usable key.
    case keysUnavailable = "keys_unavailable"
    /// `exp` is further from `iat` (or, without `iat`, from now) than `authentication.jwt.maxLifetime`.
    case lifetimeTooLong = "lifetime_too_long"
    /// `iat` is in the future (beyond the clock skew allowed).
    case issuedInFuture = "issued_in_future"
    /// A verified client certificate, but with no name the gateway takes as an identity: no URI or DNS SAN
    /// (and its CN does not count without `tls.identityFromCommonName`).
    case certificateWithoutIdentity = "certificate_without_identity"

    /// What the caller is told (no secret, nothing the caller did not send).
    package var explanation: String {
        switch self {
        case .missingCredentials:
            "no credentials: send `authorization: Bearer <jwt>` metadata or connect with a client certificate"
        case .malformedToken: "the bearer token is not a well-formed JWT"
        case .unsupportedAlgorithm: "the token's alg is not RS256 or ES256"
        case .unknownKey: "no key of the gateway's JWKS has the token's kid"
        case .badSignature: "the token's signature does not verify"
        case .expired: "the token has expired (or has no exp)"
        case .notYetValid: "the token is not valid yet (nbf)"
        case .wrongIssuer: "the token's iss is not the issuer this gateway trusts"
        case .wrongAudience: "the token's aud does not name this gateway"
        case .missingSubject: "the token has no sub"
        case .tokensNotAccepted: "this gateway accepts no bearer tokens (authentication.jwt is not configured)"
        case .keysUnavailable: "the gateway has no usable verification keys"
        case .lifetimeTooLong: "the token's lifetime (exp - iat) is longer than this gateway accepts"
        case .issuedInFuture: "the token's iat is in the future"
        case .certificateWithoutIdentity:
            "the client certificate names no identity: it needs a URI SAN (e.g. a SPIFFE id) or a DNS SAN"
        }
    }
}

/// Why an authenticated caller may not make a call (PERMISSION_DENIED).
package enum AccessRefusal: Error, Sendable, Hashable {
    /// The identity is not in `callers`.
    case unknownCaller(identity: String)
    /// The caller may not use the app it named (or, for an empty name, the app it would default to).
    case appNotAllowed(identity: String, app: String)
    /// The caller's `permissions` lack the one the method needs (`method`: the RPC's path).
    case permissionNotGranted(identity: String, permission: CallerPermissions, method: String)

    /// The `reason` label of the refusal metric.
    package var reason: String {
        switch self {
        case .unknownCaller: "unknown_caller"
        case .appNotAllowed: "app_not_allowed"
        case .permissionNotGranted: "permission_not_granted"
        }
    }
}

/// Who is calling, as established before any handler runs. Bound for the call's task as
/// `CallerIdentity.current`, so the rate budget can give each caller its share.
package struct CallerIdentity: Sendable, Hashable {
    /// The identity as people read it (logs, metric labels, refusals, the resume-token binding): for a listed
    /// caller its `callers[].identity` exactly as configured, else `name`'s `callers` notation. Unique per
    /// caller either way (`callers` refuses two entries for one name).
    package var identity: String
    /// The typed name that was proven (a JWT `sub`, or a certificate URI SAN / DNS SAN / CN).
    package var name: CallerName
    /// The caller's `weight` from `callers` (1 in open mode).
    package var weight: Int
    /// True when the identity is listed in `callers` (metrics label only listed callers).
    package var listed: Bool
    /// What the caller may do (`callers[].permissions`; every permission in open mode and without the key).
    package var permissions: CallerPermissions
    /// How many ServeRealtimeRequests streams the caller may hold open at once (`callers[].maxRealtimeStreams`;
    /// nil = no limit of its own, in open mode).
    package var maxRealtimeStreams: Int?

    /// How an identity was proven.
    package enum Source: String, Sendable, Hashable {
        /// A verified bearer JWT (`sub`).
        case jwt
        /// A verified client certificate.
        case certificate
    }

    /// How `name` was proven.
    package var source: Source {
        if case .subject = name { return .jwt }
        return .certificate
    }

    /// A caller known by `name`, shown as `identity` (default: `name` in the `callers` notation).
    package init(
        name: CallerName, identity: String? = nil, weight: Int = 1, listed: Bool = false,
        permissions: CallerPermissions = .all, maxRealtimeStreams: Int? = nil
    ) {
        self.name = name
        self.identity = identity ?? name.description
        self.weight = weight
        self.listed = listed
        self.permissions = permissions
        self.maxRealtimeStreams = maxRealtimeStreams
    }

    /// A caller from an identity string: for `.jwt` the `sub` itself, for `.certificate` a name in the
    /// `callers` notation (`spiffe://…`, `uri:…`, `dns:…`, `cn:…`; any other string is taken as a URI SAN).
    package init(identity: String, source: Source, weight: Int = 1, listed: Bool = false) {
        var name = CallerName.subject(identity)
        if source == .certificate {
            name = CallerName(listed: identity)
            if case .subject(let value) = name { name = .uri(value) }
        }
        self.init(name: name, identity: identity, weight: weight, listed: listed)
    }

    /// Nil when the caller holds `permission`, the one `method` (an RPC's path) needs; else the refusal.
    package func refusal(needing permission: CallerPermissions, method: String) -> AccessRefusal? {
        guard !permissions.isSuperset(of: permission) else { return nil }
        return .permissionNotGranted(identity: identity, permission: permission, method: method)
    }

    /// The caller of the call the current task serves, if known.
    @TaskLocal package static var current: CallerIdentity?
}
