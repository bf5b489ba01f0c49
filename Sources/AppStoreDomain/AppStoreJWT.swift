import GatewayFoundation

/// Whose token it is: Apple scopes a request JWT to one key of one issuer for one app.
package struct JWTIdentity: Sendable, Hashable {
    /// The Issuer ID (a UUID) from App Store Connect.
    package var issuerID: String
    /// The In-App Purchase key's 10-character id.
    package var keyID: String
    /// The app's bundle id (`bid`).
    package var bundleID: String

    /// An identity.
    package init(issuerID: String, keyID: String, bundleID: String) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
    }
}

/// Signs a JWS signing input with ES256 and returns the raw 64-byte `R‖S` (RFC 7518 §3.4), not DER.
/// Implemented with OpenSSL outside this module; tests use a fake.
package protocol ES256Signer: Sendable {
    /// The raw signature over `signingInput`.
    func sign(_ signingInput: [UInt8]) throws -> [UInt8]
}

/// Lifetimes of the request JWT. Defaults: `iat` 60 s in the past (tolerates our clock running
/// ahead of Apple's), 20 min lifetime counted from `iat`, re-minted 5 min before `exp`, so a token
/// is reused for at most 14 min and is never sent with less than 5 min left.
package struct JWTSettings: Sendable, Hashable {
    /// How far `iat` is backdated. Default 60 s.
    package var issuedAtSkew: Duration
    /// `exp - iat`; Apple rejects more than 60 min. Default 20 min.
    package var lifetime: Duration
    /// A cached token is replaced once `exp - refreshMargin` is reached. Default 5 min.
    package var refreshMargin: Duration

    /// The documented defaults.
    package static let defaults = JWTSettings()

    /// Settings; unspecified values take the defaults.
    package init(
        issuedAtSkew: Duration = .seconds(60), lifetime: Duration = .seconds(20 * 60),
        refreshMargin: Duration = .seconds(5 * 60)
    ) {
        self.issuedAtSkew = issuedAtSkew
        self.lifetime = lifetime
        self.refreshMargin = refreshMargin
    }

    /// Rejects settings Apple would refuse or that would re-mint on every call.
    package func validate() throws(GatewayError) {
        guard lifetime > .zero, lifetime <= .seconds(3600) else {
            throw .invalidArgument(field: "jwt.lifetime", problem: "must be between 1 s and 3600 s (Apple's limit)")
        }
        guard issuedAtSkew >= .zero, refreshMargin >= .zero, issuedAtSkew + refreshMargin < lifetime else {
            throw .invalidArgument(
                field: "jwt.refreshMargin", problem: "skew plus refresh margin must be shorter than the lifetime")
        }
    }
}

/// The claims of an App Store Server API request JWT (Apple's App Store Server API documentation).
package struct JWTClaims: Sendable, Hashable {
    /// Apple's fixed audience.
    package static let audience = "appstoreconnect-v1"
    /// `iss`: the issuer id.
    package var issuer: String
    /// `iat`: UNIX seconds.
    package var issuedAt: Int64
    /// `exp`: UNIX seconds.
    package var expiresAt: Int64
    /// `bid`: the bundle id.
    package var bundleID: String

    /// Claims for `identity` minted at `now`: `iat = now - skew`, `exp = iat + lifetime`.
    package init(identity: JWTIdentity, now: WallTime, settings: JWTSettings = .defaults) {
        issuer = identity.issuerID
        issuedAt = (now - settings.issuedAtSkew).secondsSince1970
        expiresAt = issuedAt + settings.lifetime.wholeMilliseconds / 1000
        bundleID = identity.bundleID
    }

    /// The payload JSON, keys in a fixed order.
    package var json: String {
        JSONText.object([
            ("iss", JSONText.quoted(issuer)), ("iat", String(issuedAt)), ("exp", String(expiresAt)),
            ("aud", JSONText.quoted(Self.audience)), ("bid", JSONText.quoted(bundleID)),
        ])
    }
}

/// A signed request JWT and when to stop using it.
package struct SignedJWT: Sendable, Hashable {
    /// The compact JWS, sent as `Authorization: Bearer <token>`.
    package var token: String
    /// The `exp` claim as a wall time.
    package var expiresAt: WallTime
    /// When a cache should replace it (`exp - refreshMargin`).
    package var refreshAt: WallTime
}

/// Builds App Store Server API request JWTs; the ES256 signature comes from an `ES256Signer`.
package enum AppStoreJWT {
    /// The JOSE header JSON: `{"alg":"ES256","kid":…,"typ":"JWT"}`.
    package static func header(keyID: String) -> String {
        JSONText.object([("alg", "\"ES256\""), ("kid", JSONText.quoted(keyID)), ("typ", "\"JWT\"")])
    }

    /// `base64url(header).base64url(claims)`: the bytes the signature covers.
    package static func signingInput(keyID: String, claims: JWTClaims) -> String {
        Base64URL.encode(Array(header(keyID: keyID).utf8)) + "." + Base64URL.encode(Array(claims.json.utf8))
    }

    /// Mints a token for `identity` at `now`. Throws what the signer throws, or
    /// `GatewayError.internalBug` when the signature is not 64 bytes.
    package static func mint(
        identity: JWTIdentity, now: WallTime, settings: JWTSettings = .defaults, signer: some ES256Signer
    ) throws -> SignedJWT {
        let claims = JWTClaims(identity: identity, now: now, settings: settings)
        let input = signingInput(keyID: identity.keyID, claims: claims)
        let signature = try signer.sign(Array(input.utf8))
        guard signature.count == 64 else {
            throw GatewayError.internalBug(
                "ES256 signer returned \(signature.count) bytes instead of a 64-byte R||S", requestID: nil)
        }
        let expiresAt = WallTime(millisecondsSince1970: claims.expiresAt * 1000)
        return SignedJWT(
            token: input + "." + Base64URL.encode(signature), expiresAt: expiresAt,
            refreshAt: expiresAt - settings.refreshMargin)
    }
}
