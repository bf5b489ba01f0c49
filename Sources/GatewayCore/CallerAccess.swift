/// Why a caller's credentials were not accepted (UNAUTHENTICATED). Each case is one value of the
/// `reason` label of the refusal metric and of the status's ErrorInfo, so the set is fixed.
public enum AuthenticationFailure: String, Error, Sendable, Hashable, CaseIterable {
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

    /// What the caller is told (no secret, nothing the caller did not send).
    public var explanation: String {
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
        }
    }
}

/// Why an authenticated caller may not make a call (PERMISSION_DENIED).
public enum AccessRefusal: Error, Sendable, Hashable {
    /// The identity is not in `callers`.
    case unknownCaller(identity: String)
    /// The caller may not use the app it named (or, for an empty name, the app it would default to).
    case appNotAllowed(identity: String, app: String)

    /// The `reason` label of the refusal metric.
    public var reason: String {
        switch self {
        case .unknownCaller: "unknown_caller"
        case .appNotAllowed: "app_not_allowed"
        }
    }
}

/// Who is calling, as established before any handler runs. Bound for the call's task as
/// `CallerIdentity.current`, so the rate budget can give each caller its share.
public struct CallerIdentity: Sendable, Hashable {
    /// The identity string: a JWT `sub`, or the client certificate's URI SAN / DNS SAN / CN.
    public var identity: String
    /// How it was proven.
    public var source: Source
    /// The caller's `weight` from `callers` (1 in open mode).
    public var weight: Int
    /// True when the identity is listed in `callers` (metrics label only listed callers).
    public var listed: Bool

    /// How an identity was proven.
    public enum Source: String, Sendable, Hashable {
        /// A verified bearer JWT (`sub`).
        case jwt
        /// A verified client certificate.
        case certificate
    }

    public init(identity: String, source: Source, weight: Int = 1, listed: Bool = false) {
        self.identity = identity
        self.source = source
        self.weight = weight
        self.listed = listed
    }

    /// The caller of the call the current task serves, if known.
    @TaskLocal public static var current: CallerIdentity?
}

/// The `callers` list as decisions: pure, built once from the configuration.
public struct CallerPolicy: Sendable {
    /// True when `callers` is absent: every caller (identified or not) may use every app.
    public let isOpen: Bool
    private let callers: [String: GatewayConfiguration.Caller]
    private let apps: AppDirectory

    /// The policy of `callers` (nil = open) over the configured `apps`.
    public init(callers: [GatewayConfiguration.Caller]?, apps: [GatewayConfiguration.App]) {
        isOpen = callers == nil
        self.callers = Dictionary((callers ?? []).map { ($0.identity, $0) }, uniquingKeysWith: { first, _ in first })
        self.apps = AppDirectory(apps)
    }

    /// Admits an authenticated (or, in open mode, anonymous) caller to the service: the identity with its
    /// weight, or PERMISSION_DENIED for an identity not listed. Anonymous callers never reach here unless open.
    public func admit(_ identity: CallerIdentity?) -> Result<CallerIdentity?, AccessRefusal> {
        guard !isOpen else { return .success(identity) }
        guard let identity, let caller = callers[identity.identity] else {
            return .failure(.unknownCaller(identity: identity?.identity ?? ""))
        }
        var admitted = identity
        admitted.weight = caller.weight
        admitted.listed = true
        return .success(admitted)
    }

    /// Whether `caller` may name `app` (a name or bundle id; empty = the only configured app). An unknown app
    /// is allowed only to callers with "*" (they then get NOT_FOUND from the handler; others learn nothing).
    /// An empty name with several apps configured is allowed only with "*" (the handler then decides).
    public func authorize(_ caller: CallerIdentity?, app name: String) -> AccessRefusal? {
        guard !isOpen else { return nil }
        guard let caller, let entry = callers[caller.identity] else {
            return .unknownCaller(identity: caller?.identity ?? "")
        }
        if entry.apps.contains("*") { return nil }
        let resolved = try? apps.app(named: name)
        if let resolved, entry.apps.contains(resolved.name) { return nil }
        return .appNotAllowed(identity: caller.identity, app: resolved?.name ?? name)
    }

    /// The identities listed, for bounded metric labels.
    public var listedIdentities: [String] { callers.keys.sorted() }
}
